"""`saltpan compile --all --diff REV | --diff OLD..NEW | --diff-to DIR`: the blast radius of a change to the trees.

Two sides are compiled for every minion, with the same config and grains,
differing only in their trees:

* ``--diff REV`` with a tree served from git remotes (gitfs, git_pillar) whose cached clones
  have REV: old = those remotes at REV, new = as fetched (``OLD..NEW``: two revisions of them);
  see ``revisions`` and ``runtime.gitfs.pin``.

* ``--diff REV``: old = the roots as they are in git revision REV, new = the
  roots on disk (the work tree, uncommitted changes included).  REV is
  exported with ``git archive`` into a temporary directory, so the user's
  checkout, index and branches are never touched.
* ``--diff-to DIR``: old = the roots on disk, new = the same roots inside DIR,
  another copy of them (a candidate checkout): each root maps to DIR joined
  with its path relative to the roots' common parent directory.

Per minion: which pillar keys changed (old -> new, deepest differing key),
and which states (low chunks, by their ``state_|-id_|-name_|-fun`` tag) were
added, removed or changed (which arguments), and whether the order of the
states both sides share changed; then how many minions each change touches.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.cli.fleet_compile import FleetRequest, MinionCompiler, MinionOutcome, minion_grains
from runtime.cli.masking import Masker, mask_strings, redact

ROOT_KEYS = ("pillar_roots", "file_roots")
_ABSENT = object()


class DiffError(Exception):
    """The old side cannot be built (bad revision, roots outside git, missing directory)."""


# -- the two sides --------------------------------------------------------------------

def root_dirs(opts: Mapping[str, Any]) -> list[str]:
    dirs: list[str] = []
    for key in ROOT_KEYS:
        for env_dirs in (opts.get(key) or {}).values():
            for d in env_dirs or []:
                path = os.path.abspath(d)
                if path not in dirs:
                    dirs.append(path)
    return dirs


def with_roots(opts: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """opts with every root directory replaced through mapping."""
    out = dict(opts)
    for key in ROOT_KEYS:
        roots = opts.get(key) or {}
        out[key] = {env: [mapping[os.path.abspath(d)] for d in dirs or []] for env, dirs in roots.items()}
    return out


def copy_roots(opts: Mapping[str, Any], other: str) -> dict[str, Any]:
    """opts whose roots are the same directories inside `other` (relative to the roots' common parent)."""
    if not os.path.isdir(other):
        raise DiffError(f"--diff-to {other}: no such directory")
    dirs = root_dirs(opts)
    if not dirs:
        raise DiffError("the config has no pillar_roots or file_roots to compare")
    common = os.path.commonpath(dirs) if len(dirs) > 1 else dirs[0]
    mapping = {d: os.path.normpath(os.path.join(os.path.abspath(other), os.path.relpath(d, common))) for d in dirs}
    return with_roots(opts, mapping)


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise DiffError("--diff needs git, which is not installed (use --diff-to DIR)") from None


def _toplevel(path: str) -> str:
    probe = path
    while not os.path.isdir(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    proc = _git(["rev-parse", "--show-toplevel"], probe)
    if proc.returncode != 0:
        raise DiffError(f"root {path} is not in a git repository, so --diff REV cannot find its old version "
                        "(use --diff-to DIR with another copy of the roots)")
    return os.path.realpath(proc.stdout.strip())


@contextlib.contextmanager
def revision_roots(opts: Mapping[str, Any], rev: str) -> Iterator[dict[str, Any]]:
    """opts whose roots are those of git revision `rev`, exported into a temporary directory."""
    dirs = root_dirs(opts)
    if not dirs:
        raise DiffError("the config has no pillar_roots or file_roots to compare")
    by_repo: dict[str, list[str]] = {}
    for d in dirs:
        by_repo.setdefault(_toplevel(d), []).append(d)
    with tempfile.TemporaryDirectory(prefix="saltpan-diff-") as tmp:
        mapping: dict[str, str] = {}
        for number, (top, repo_dirs) in enumerate(sorted(by_repo.items())):
            commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], top)
            if commit.returncode != 0:
                raise DiffError(f"{rev!r} is not a commit of the git repository {top}")
            sha = commit.stdout.strip()
            dest = os.path.join(tmp, f"repo{number}")
            os.makedirs(dest)
            rels = {d: os.path.relpath(os.path.realpath(d), top) for d in repo_dirs}
            for d, rel in rels.items():
                if rel == ".." or rel.startswith("../"):  # pragma: no cover - git found top from d itself
                    raise DiffError(f"root {d} is outside the git repository {top}")
            present = [rel for rel in sorted(set(rels.values())) if _exists_at(top, sha, rel)]
            if present:
                _export(top, sha, [] if "." in present else present, dest)
            for d, rel in rels.items():
                mapping[d] = os.path.normpath(os.path.join(dest, rel))
        yield with_roots(opts, mapping)


def split_range(spec: str) -> tuple[str, str | None]:
    """``OLD..NEW`` -> (OLD, NEW); ``REV`` -> (REV, None): the new side is then the trees as they are."""
    if ".." in spec:
        old, new = spec.split("..", 1)
        if not old or not new or ".." in new:
            raise DiffError(f"--diff {spec!r}: give REV, or OLD..NEW (two revisions)")
        return old, new
    return spec, None


def _git_revision(opts: Mapping[str, Any], rev: str) -> dict[str, Any] | None:
    """opts whose git remotes (gitfs, git_pillar) that have rev serve it; None when none has it."""
    from runtime.gitfs import uses_git_pillar, uses_gitfs

    if not (uses_gitfs(opts) or uses_git_pillar(opts)):
        return None
    from runtime.gitfs.pin import pinned
    from runtime.gitfs.remotes import GitConfigError

    try:
        result = pinned(opts, rev, opts.get("saltenv") or None)
    except GitConfigError as exc:
        raise DiffError(str(exc)) from None
    if not result.pins:
        return None
    for pin in result.pins:
        print(f"saltpan compile: --diff: {pin.remote.label} at {rev} ({pin.commit[:10]})", file=sys.stderr)
    return result.opts


@contextlib.contextmanager
def revisions(opts: Mapping[str, Any], spec: str) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(old opts, new opts) of ``--diff REV`` / ``--diff OLD..NEW``.

    When the tree is served from git remotes (gitfs, git_pillar) and their cached clones have the
    revision, those remotes serve it (``runtime.gitfs.pin``): the fleet is compared at two refs of
    the remote, REV against the remote as fetched.  Otherwise REV is a revision of the git
    repository holding pillar_roots / file_roots, exported as ``revision_roots`` does.
    """
    old_rev, new_rev = split_range(spec)
    old = _git_revision(opts, old_rev)
    if old is not None:
        new = opts if new_rev is None else _git_revision(opts, new_rev)
        if new is None:
            raise DiffError(f"{new_rev!r} is not a branch, tag or commit of the git remotes that have {old_rev!r}")
        yield old, new
        return
    with contextlib.ExitStack() as stack:
        try:
            old_roots = stack.enter_context(revision_roots(opts, old_rev))
            new_roots = opts if new_rev is None else stack.enter_context(revision_roots(opts, new_rev))
        except DiffError as exc:
            from runtime.gitfs import uses_git_pillar, uses_gitfs

            if uses_gitfs(opts) or uses_git_pillar(opts):
                raise DiffError(f"{old_rev!r} is neither a branch, tag or commit of a git remote of the config "
                                "(as last fetched: `saltpan fileserver update` or `compile --fetch` first) nor a "
                                f"revision of the roots: {exc}") from None
            raise
        yield old_roots, new_roots


def _exists_at(top: str, sha: str, rel: str) -> bool:
    if rel == ".":
        return True
    return _git(["cat-file", "-e", f"{sha}:{rel}"], top).returncode == 0


def _export(top: str, sha: str, paths: list[str], dest: str) -> None:
    """`git archive` of sha (only paths, when given) unpacked into dest."""
    cmd = ["git", "archive", "--format=tar", sha, "--", *paths]
    with subprocess.Popen(cmd, cwd=top, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(dest, filter=_inside)
                else:  # pragma: no cover - Python < 3.11.4 has no extraction filters
                    tar.extractall(dest, members=(m for m in tar if _plain_member(m)))
        except (tarfile.TarError, OSError) as exc:
            proc.kill()
            raise DiffError(f"cannot export {sha[:12]} of {top}: {exc}") from None
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.wait(timeout=120) != 0:
            raise DiffError(f"git archive {sha[:12]} in {top} failed: {err.strip()}")


def _inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's "data" filter, skipping (not failing on) what it refuses: e.g. a symlink leading out of the
    tree, whose target the compiler would refuse to read anyway."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _plain_member(member: tarfile.TarInfo) -> bool:
    def inside(name: str) -> bool:
        return not name.startswith("/") and ".." not in name.split("/")

    if not inside(member.name):
        return False
    if member.issym() or member.islnk():
        return inside(os.path.normpath(os.path.join(os.path.dirname(member.name), member.linkname)))
    return member.isfile() or member.isdir()


# -- one minion ------------------------------------------------------------------------

@dataclass
class PillarChange:
    key: str
    old: Any  # masked unless --unmask; None with old_absent
    new: Any
    old_absent: bool = False
    new_absent: bool = False

    @property
    def kind(self) -> str:
        return "added" if self.old_absent else "removed" if self.new_absent else "changed"


@dataclass
class StateChange:
    kind: str  # added, removed, changed
    tag: str
    id: str
    function: str  # "file.managed"
    sls: str
    args: list[tuple[str, Any, Any]] = field(default_factory=list)  # changed: (argument, old, new); None = absent

    def group(self) -> str:
        return f"state {self.id} ({self.function}, sls {self.sls}) {self.kind}"


@dataclass
class MinionDiff:
    pillar: list[PillarChange] = field(default_factory=list)
    states: list[StateChange] = field(default_factory=list)
    order_changed: bool = False
    compared_states: bool = True

    @property
    def same(self) -> bool:
        return not (self.pillar or self.states or self.order_changed)

    def groups(self) -> list[str]:
        out = [f"pillar {c.key} {c.kind}" for c in self.pillar]
        out += [c.group() for c in self.states]
        if self.order_changed:
            out.append("order of states changed")
        return out


def strictly_equal(a: Any, b: Any) -> bool:
    """== that also tells 1 from True and 1 from 1.0 (YAML `yes` and `1` are different pillar values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff_pillar(old: Any, new: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """(path, old, new) of the deepest keys that differ; _ABSENT for a missing side."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in list(old) + [k for k in new if k not in old]:
            if not path and key == "_errors":
                continue
            out += diff_pillar(old.get(key, _ABSENT), new.get(key, _ABSENT), path + (key,))
        return out
    if old is _ABSENT and new is _ABSENT:
        return []
    if old is _ABSENT or new is _ABSENT or not strictly_equal(old, new):
        return [(path, old, new)]
    return []


def _tag(chunk: Mapping[str, Any]) -> str:
    from compiler.requisites import tag

    return tag(dict(chunk))


def _unique(chunks: list[dict] | None) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for chunk in chunks or []:
        out.setdefault(_tag(chunk), chunk)
    return out


def diff_states(old: list[dict] | None, new: list[dict] | None) -> tuple[list[StateChange], bool]:
    before, after = _unique(old), _unique(new)
    changes: list[StateChange] = []

    def ref(kind: str, tag: str, chunk: Mapping[str, Any]) -> StateChange:
        return StateChange(kind, tag, str(chunk.get("__id__")), f"{chunk.get('state')}.{chunk.get('fun')}",
                           str(chunk.get("__sls__")))

    for tag, chunk in before.items():
        if tag not in after:
            changes.append(ref("removed", tag, chunk))
    for tag, chunk in after.items():
        if tag not in before:
            changes.append(ref("added", tag, chunk))
            continue
        prev = before[tag]
        args = []
        for arg in list(prev) + [k for k in chunk if k not in prev]:
            if arg == "order":
                continue
            a, b = prev.get(arg, _ABSENT), chunk.get(arg, _ABSENT)
            if a is _ABSENT or b is _ABSENT or not strictly_equal(a, b):
                args.append((str(arg), None if a is _ABSENT else a, None if b is _ABSENT else b))
        if args:
            change = ref("changed", tag, chunk)
            change.args = args
            changes.append(change)
    common_before = [t for t in before if t in after]
    common_after = [t for t in after if t in before]
    return changes, common_before != common_after


def minion_diff(old_pillar: dict, new_pillar: dict, old_states: list[dict] | None, new_states: list[dict] | None,
                masker: Masker, compare_states: bool = True) -> MinionDiff:
    out = MinionDiff(compared_states=compare_states)
    for path, old, new in diff_pillar(old_pillar, new_pillar):
        key = ":".join(str(p) for p in path)
        out.pillar.append(PillarChange(
            key, None if old is _ABSENT else masker.mask_value(path, old),
            None if new is _ABSENT else masker.mask_value(path, new), old is _ABSENT, new is _ABSENT))
    if compare_states:
        out.states, out.order_changed = diff_states(old_states, new_states)
        if masker.active:
            secrets = sorted(set(masker.secrets(old_pillar)) | set(masker.secrets(new_pillar)),
                             key=lambda s: (-len(s), s))
            for change in out.states:
                change.args = [(arg, *((redact(a), redact(b)) if masker.secret_key(arg)
                                       else (mask_strings(a, secrets), mask_strings(b, secrets))))
                               for arg, a, b in change.args]
    return out


class DiffRunner:
    """Compiles each minion on both sides and diffs them (a runner for fleet_compile.run_all)."""

    def __init__(self, old_opts: Mapping[str, Any], new_opts: Mapping[str, Any],
                 fleet: Mapping[str, Mapping[str, Any]], compare_states: bool, unmask: bool,
                 target: tuple[str, str] | None = None):
        request = FleetRequest(show="lowstate" if compare_states else "pillar", keep_data=False, unmask=unmask)
        self.old = MinionCompiler(old_opts, fleet, request)
        self.new = MinionCompiler(new_opts, fleet, request)
        self.fleet = fleet
        self.compare_states = compare_states
        self.masker = Masker.from_opts(new_opts, unmask)
        self.target = target

    def run(self, minion_id: str) -> MinionOutcome:
        grains = minion_grains(self.fleet, minion_id)
        old = self.old.compile(minion_id, grains)
        new = self.new.compile(minion_id, grains)
        if self.target is not None and not (self._selected(minion_id, grains, old.pillar)
                                            or self._selected(minion_id, grains, new.pillar)):
            return MinionOutcome(minion_id, matched=False)
        errors = [f"old tree: {e}" for e in old.errors] + [f"new tree: {e}" for e in new.errors]
        if errors:
            return MinionOutcome(minion_id, errors=errors)
        diff = minion_diff(old.pillar, new.pillar, old.view, new.view, self.masker, self.compare_states)
        return MinionOutcome(minion_id, diff=diff)

    def _selected(self, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any]) -> bool:
        from runtime.cli import fleet_source as fleet_mod

        assert self.target is not None
        tgt, tgt_type = self.target
        return fleet_mod.matches(minion_id, dict(grains), tgt, tgt_type, self.old.opts.get("nodegroups") or {},
                                 dict(pillar))


# -- the report ------------------------------------------------------------------------

def summary(outcomes: list[MinionOutcome]) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter()
    for outcome in outcomes:
        if outcome.diff is not None:
            counts.update(set(outcome.diff.groups()))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _show(value: Any, absent: bool, limit: int = 160) -> str:
    from runtime.cli.output import to_json

    if absent:
        return "(absent)"
    text = to_json(value, indent=None)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def to_text(outcomes: list[MinionOutcome], compared: int) -> str:
    lines: list[str] = []
    different = [o for o in outcomes if o.diff is not None and not o.diff.same]
    for outcome in different:
        diff = outcome.diff
        lines.append(f"{outcome.minion}:")
        if diff.pillar:
            lines.append("  pillar:")
            for change in diff.pillar:
                lines.append(f"    {change.key}: {_show(change.old, change.old_absent)} -> "
                             f"{_show(change.new, change.new_absent)}")
        if diff.states or diff.order_changed:
            lines.append("  states:")
            marks = {"added": "+", "removed": "-", "changed": "~"}
            for state in diff.states:
                lines.append(f"    {marks[state.kind]} {state.tag}  (sls {state.sls})")
                for arg, old, new in state.args:
                    lines.append(f"        {arg}: {_show(old, old is None)} -> {_show(new, new is None)}")
            if diff.order_changed:
                lines.append("    order of the states both sides have changed")
    if different:
        lines.append("")
        lines.append(f"Changes, with the number of minions each touches (of {compared} compared):")
        for group, count in summary(outcomes):
            lines.append(f"  {count:>6}  {group}")
    failed = sum(1 for o in outcomes if o.failed)
    tail = f"{len(different)} of {compared} minions differ, {compared - len(different) - failed} unchanged"
    if failed:
        tail += f", {failed} failed to compile (see stderr)"
    lines.append(("" if different else "") + tail + ".")
    return "\n".join(lines)


def to_data(outcomes: list[MinionOutcome], compared: int) -> dict[str, Any]:
    minions = {}
    for outcome in outcomes:
        diff = outcome.diff
        if diff is None or diff.same:
            continue
        minions[outcome.minion] = {
            "pillar": [{"key": c.key, "change": c.kind, "old": c.old, "new": c.new} for c in diff.pillar],
            "states": [{"change": s.kind, "tag": s.tag, "id": s.id, "function": s.function, "sls": s.sls,
                        "arguments": [{"name": a, "old": o, "new": n} for a, o, n in s.args]}
                       for s in diff.states],
            "order_changed": diff.order_changed,
        }
    return {
        "compared": compared,
        "different": len(minions),
        "minions": minions,
        "summary": [{"change": group, "minions": count} for group, count in summary(outcomes)],
        "errors": {o.minion: o.errors for o in outcomes if o.failed},
    }
