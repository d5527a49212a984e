"""Compile many minions: one at a time with reused compilers, or over the cores in a process pool.

``MinionCompiler`` keeps one pillar compiler and one state compiler (Jinja
templates, parsed files and sls lists stay cached across minions).  ``run_all``
runs any runner with a ``run(minion_id) -> MinionOutcome`` method over a list
of minions: in this process for ``jobs=1``, otherwise in a pool of forked
workers that inherit the runner (warmed up by compiling the first minion here,
so templates are compiled once, before the fork).  A minion that fails, even
with an unexpected exception, is one failed outcome; the others go on.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from runtime import pipeline
from runtime.cli.masking import Masker, mask_strings
from runtime.cli.schema import SchemaSet, Violation, locate

VIEWS = ("pillar", "top", "highstate", "lowstate")


@dataclass
class MinionOutcome:
    """What compiling one minion gave."""

    minion: str
    matched: bool = True  # false: not selected by a pillar-based target (nothing else is set)
    errors: list[str] = field(default_factory=list)  # "file:line: message"
    data: Any = None
    text: str | None = None  # the data rendered in the requested format
    violations: list[Violation] = field(default_factory=list)
    diff: Any = None  # runtime.cli.fleet_diff.MinionDiff
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return bool(self.errors)


@dataclass
class Compiled:
    """Pillar and (when asked) one state view of a minion, with every error."""

    pillar: dict
    view: Any
    errors: list[str]


@dataclass
class FleetRequest:
    """What to do for each minion."""

    show: str = "pillar"
    out: str | None = None  # render `text` in this format (json, yaml, nested, txt); None: keep only data
    label: bool = False  # rendered text carries the minion id (Salt's multi-minion look)
    keep_data: bool = True
    validate: bool = False
    unmask: bool = False
    target: tuple[str, str] | None = None  # (tgt, tgt_type), matched here when it needs the pillar
    out_dir: str | None = None  # each worker writes <out_dir>/<minion>.<ext> itself (text is then not returned)
    check_states: bool = False  # highstate/lowstate: a state function saltpan lacks is an error (check_states)


class Runner(Protocol):
    def run(self, minion_id: str) -> MinionOutcome: ...


def minion_grains(fleet: Mapping[str, Mapping[str, Any]], minion_id: str) -> dict[str, Any]:
    grains = dict(fleet.get(minion_id) or {})
    grains["id"] = minion_id
    return grains


class MinionCompiler:
    """Compiles minions of one tree (opts) one at a time, keeping its compilers between minions."""

    def __init__(self, opts: Mapping[str, Any], fleet: Mapping[str, Mapping[str, Any]], request: FleetRequest,
                 schemas: SchemaSet | None = None):
        self.opts = opts
        self.fleet = fleet
        self.request = request
        from compiler.roots import LocalRoots
        from runtime.cli.roots_snapshot import SnapshotSource

        # one view of the trees for the whole run: each file read and each saltenv listed once
        pillar_source = SnapshotSource(LocalRoots(opts.get("pillar_roots") or {}))
        self.pillar_compiler = pipeline.pillar_compiler(opts, pillar_source)
        self.state_compiler = None
        if request.show != "pillar":
            self.state_compiler = pipeline.state_compiler(opts, SnapshotSource(pipeline.file_source(opts)))
        self.masker = Masker.from_opts(opts, request.unmask)
        self.schemas = schemas if request.validate else None

    def compile(self, minion_id: str, grains: Mapping[str, Any] | None = None, result: Any = None) -> Compiled:
        """The minion's pillar and requested view; errors formatted file:line first.

        ``result``: the minion's PillarResult when the caller compiled it already.
        """
        grains = grains if grains is not None else minion_grains(self.fleet, minion_id)
        if result is None:
            result = self.pillar_compiler.compile(minion_id, grains)
        errors = [str(err) for err in result.errors]
        if self.request.show == "pillar" or errors or result.failed:
            return Compiled(result.pillar, result.pillar if self.request.show == "pillar" else None, errors)
        states = pipeline.compile_states(self.opts, minion_id, grains, result.pillar, self.request.show,
                                         compiler=self.state_compiler, with_lowstate=self.request.check_states)
        problems = list(states.errors)
        if self.request.check_states and not problems:
            problems += pipeline.check_states(states)[0]
        return Compiled(result.pillar, states.data, [str(err) for err in problems])

    def run(self, minion_id: str) -> MinionOutcome:
        started = time.perf_counter()
        grains = minion_grains(self.fleet, minion_id)
        request = self.request
        pillar_result = None
        if request.target is not None:
            from runtime.cli import fleet_source as fleet_mod

            # a pillar-based target: compile the pillar to know whether the minion is selected
            pillar_result = self.pillar_compiler.compile(minion_id, grains)
            tgt, tgt_type = request.target
            if not fleet_mod.matches(minion_id, grains, tgt, tgt_type, self.opts.get("nodegroups") or {},
                                     pillar_result.pillar):
                return MinionOutcome(minion_id, matched=False)
        compiled = self.compile(minion_id, grains, pillar_result)
        outcome = MinionOutcome(minion_id, errors=compiled.errors)
        if self.schemas is not None and not compiled.errors:
            outcome.violations = self.schemas.check(compiled.pillar, self.masker)
            if outcome.violations:
                tracked = self.pillar_compiler.compile(minion_id, grains, track=True)
                locate(outcome.violations, tracked, minion_id)
        if compiled.view is not None:
            if request.out:
                outcome.text = self.render(minion_id, compiled)
            if request.keep_data:
                outcome.data = compiled.view
        if request.out_dir:
            write_out_dir(request.out_dir, outcome, request.out or "json")
            outcome.text = None
        outcome.seconds = time.perf_counter() - started
        return outcome

    def render(self, minion_id: str, compiled: Compiled) -> str:
        """The view in the requested format; human formats (nested, txt) with secrets masked."""
        from runtime.cli import output

        fmt = self.request.out or "json"
        data = compiled.view
        if fmt in ("nested", "txt") and self.masker.active:
            if self.request.show == "pillar":
                data = self.masker.mask(data)
            else:
                data = mask_strings(data, self.masker.secrets(compiled.pillar))
        label = minion_id if self.request.label else None
        if fmt == "json":
            return output.to_json({minion_id: data} if label else data)
        return output.render(data, fmt, _NO_TTY, label=label, color=False)


class _NoTTY:
    def isatty(self) -> bool:
        return False


_NO_TTY: Any = _NoTTY()


def safe_call(runner: Runner, minion_id: str) -> MinionOutcome:
    """runner.run, with any unexpected exception turned into this minion's error."""
    try:
        return runner.run(minion_id)
    except Exception as exc:  # noqa: BLE001 - one minion's crash must not stop the fleet
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        detail = f" (at {where.filename}:{where.lineno})" if where else ""
        return MinionOutcome(minion_id, errors=[f"internal error: {type(exc).__name__}: {exc}{detail}"])


# -- the pool -----------------------------------------------------------------------

_RUNNER: Runner | None = None  # set in each forked worker by _init_worker


def _init_worker(runner: Runner) -> None:
    global _RUNNER
    _RUNNER = runner


def _run_in_worker(minion_id: str) -> MinionOutcome:
    assert _RUNNER is not None
    return safe_call(_RUNNER, minion_id)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_all(runner: Runner, minions: list[str], jobs: int,
            on_result: Callable[[MinionOutcome], None] | None = None) -> list[MinionOutcome]:
    """Every minion's outcome, sorted by minion id."""
    outcomes: list[MinionOutcome] = []

    def take(outcome: MinionOutcome) -> None:
        outcomes.append(outcome)
        if on_result is not None:
            on_result(outcome)

    todo = list(minions)
    jobs = max(1, min(jobs, len(todo)))
    if jobs == 1:
        for minion_id in todo:
            take(safe_call(runner, minion_id))
    else:
        import gc

        take(safe_call(runner, todo.pop(0)))  # warms the caches every worker inherits
        chunk = max(1, min(16, len(todo) // (jobs * 8)))
        gc.collect()
        gc.freeze()  # workers share the warmed objects without copying them on write
        try:
            context = multiprocessing.get_context("fork")
            with context.Pool(jobs, initializer=_init_worker, initargs=(runner,)) as pool:
                for outcome in pool.imap_unordered(_run_in_worker, todo, chunksize=chunk):
                    take(outcome)
        finally:
            gc.unfreeze()
    outcomes.sort(key=lambda o: o.minion)
    return outcomes


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, what: str = "minions", stream: TextIO | None = None,
                 enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.total = total
        self.what = what
        self.enabled = (hasattr(self.stream, "isatty") and self.stream.isatty()) if enabled is None else enabled
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()
        self._shown = 0.0

    def __call__(self, outcome: MinionOutcome) -> None:
        self.done += 1
        self.failed += 1 if outcome.failed else 0
        now = time.monotonic()
        if self.enabled and (now - self._shown >= 0.1 or self.done == self.total):
            self._shown = now
            self.draw(now)

    def draw(self, now: float) -> None:
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        failed = f", {self.failed} failed" if self.failed else ""
        self.stream.write(f"\r[{bar}] {self.done}/{self.total} {self.what}{failed} {now - self.started:.1f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()


# -- writing results ------------------------------------------------------------------

EXTENSIONS = {"json": ".json", "yaml": ".yaml", "nested": ".txt", "txt": ".txt"}


def unsafe_file_name(minion_id: str) -> str | None:
    """Why a minion id cannot name a file in --out-dir, or None."""
    if not minion_id or minion_id in (".", "..") or "/" in minion_id or "\\" in minion_id or "\x00" in minion_id:
        return f"minion id {minion_id!r} cannot name a file in --out-dir"
    return None


def write_out_dir(out_dir: str, outcome: MinionOutcome, fmt: str) -> None:
    """One file per minion, written whole (temp file + rename); a failed minion's stale file is removed."""
    path = os.path.join(out_dir, outcome.minion + EXTENSIONS.get(fmt, ".txt"))
    if outcome.failed or outcome.text is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(outcome.text)
        if not outcome.text.endswith("\n"):
            fh.write("\n")
    os.replace(tmp, path)
