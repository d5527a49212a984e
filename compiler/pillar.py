"""The pillar compiler: top -> sls (include/defaults/key) -> merge -> ext_pillar -> pillar_opts.

Pure: it reads the trees through a FileSource and calls ext_pillar drivers it
is handed (the runtime decides which drivers exist and how they may do I/O).
Errors never stop the compile: like Salt, each one becomes a string in the
pillar's ``_errors`` list, and a structured ``CompileError`` with file:line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler import match, merge, salt_functions, top
from compiler.datacopy import deepcopy
from compiler.errors import (
    EXT_PILLAR_ERROR,
    INCLUDE_CYCLE,
    MISSING_SLS,
    NOT_A_DICT,
    CompileError,
)
from compiler.render import Renderer, template_vars
from compiler.roots import FileSource, SourceFile, find_sls

ExtDriver = Callable[..., Any]
DriverLookup = Callable[[str], ExtDriver | None]

# opts keys never copied into pillar['master'] by pillar_opts
_PILLAR_OPTS_SKIP = {"pillar", "__context__", "functions", "matchers", "rend", "grains"}


@dataclass(frozen=True)
class IncludeLink:
    """One step of the way an sls was reached: the top file entry, or an sls including the next one."""

    label: str  # "top file" or the including sls ("base:roles.web")
    file: str | None
    line: int | None


@dataclass
class Contribution:
    """One source's data merged into the pillar, in merge order (``track=True``), for --explain.

    ``places`` gives the file and source line of every key of ``data`` (paths
    relative to ``data``); ``exact`` is false when a Jinja template's source
    lines could not be told and they are rendered lines.  ``nest`` is the path
    an include's ``key:`` put the data under.  ``strategy`` is how the data was
    merged: a ``pillar_source_merging_strategy``, or "replace" for pillar_opts.
    """

    source: str  # "sls", "ext_pillar", "pillar_opts", "override"
    label: str  # sls name ("base:roles.web") or driver name
    display: str | None  # file shown to users
    data: Any
    places: dict[tuple[Any, ...], tuple[str, int]] = field(default_factory=dict)
    chain: list[IncludeLink] = field(default_factory=list)  # how the sls was reached, outermost first
    nest: tuple[Any, ...] = ()  # path the data was nested under (include key:)
    strategy: str = "smart"
    exact: bool = True
    note: str | None = None


@dataclass
class PillarResult:
    """A compiled pillar.

    ``failed`` is true when ``ext_pillar_fail_hard`` stopped the compile: then
    ``pillar`` holds only ``_errors`` (no partial data ever reaches a minion).
    """

    pillar: dict[str, Any]
    errors: list[CompileError]
    contributions: list[Contribution] = field(default_factory=list)
    strategy: str = "smart"
    failed: bool = False
    merge_lists: bool = False


class PillarCompiler:
    """Compiles pillar for any number of minions from one tree (reuse it: templates are cached)."""

    def __init__(self, opts: Mapping[str, Any], source: FileSource, drivers: DriverLookup | None = None,
                 renderer: Renderer | None = None, functions: salt_functions.FunctionsFactory | None = None):
        self.opts = opts
        self.source = source
        self.drivers = drivers or (lambda name: None)
        # the execution functions templates call as salt['mod.fun'] (the caller's registry)
        self.functions = functions or salt_functions.no_functions
        self.renderer = renderer or Renderer(source, opts.get("renderer") or "jinja|yaml",
                                             opts.get("renderer_blacklist"), opts.get("renderer_whitelist"))
        self.strategy = str(opts.get("pillar_source_merging_strategy") or "smart")
        self.merge_lists = bool(opts.get("pillar_merge_lists", False))

    def compile(self, minion_id: str, grains: Mapping[str, Any], pillar_override: Mapping[str, Any] | None = None,
                pillarenv: str | None = None, saltenv: str | None = None, ext: bool = True,
                track: bool = False) -> PillarResult:
        run = _PillarRun(self, minion_id, grains, dict(pillar_override or {}), pillarenv, saltenv, track)
        return run.compile(ext)


class _PillarRun:
    """State of one minion's compile."""

    def __init__(self, owner: PillarCompiler, minion_id: str, grains: Mapping[str, Any], override: dict[str, Any],
                 pillarenv: str | None, saltenv: str | None, track: bool):
        self.o = owner
        self.opts = owner.opts
        self.minion_id = minion_id
        self.grains = grains
        self.override = override
        if pillarenv is None:
            pillarenv = self.opts.get("pillarenv") or None
            if not pillarenv and self.opts.get("pillarenv_from_saltenv"):
                pillarenv = saltenv or self.opts.get("saltenv") or None
        self.pillarenv = pillarenv
        self.saltenv = saltenv or self.opts.get("saltenv") or None
        self.track = track
        self.errors: list[CompileError] = []
        self.messages: list[str] = []
        self.contributions: list[Contribution] = []
        self.rendered: dict[tuple[str, str], Contribution] = {}  # tracked: each sls's own contribution
        # what templates see as `pillar` (Salt: the ext_pillar data when ext_pillar_first, else overrides)
        self.template_pillar: dict[str, Any] = dict(override)
        self._salt: salt_functions.SaltFunctions | None = None
        self.safe_errors = bool(self.opts.get("pillar_safe_render_error", True))
        self.fail_hard = bool(self.opts.get("ext_pillar_fail_hard", False))
        self.hard_failure: str | None = None  # the driver whose failure stopped the compile

    # -- error bookkeeping ----------------------------------------------------------
    def fail(self, err: CompileError, salt_text: str | None = None) -> None:
        self.errors.append(err)
        self.messages.append(salt_text or err.salt_message())

    # -- template context -------------------------------------------------------------
    def salt_table(self) -> salt_functions.SaltFunctions:
        if self._salt is None:
            self._salt = salt_functions.SaltFunctions(
                self.o.functions(self.minion_id, self.grains, self.template_pillar, self.opts))
        return self._salt

    def context(self, source_file: SourceFile, sls: str | None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        ctx = {
            "grains": self.grains,
            "opts": self.opts,
            "pillar": self.template_pillar,
            "salt": self.salt_table(),
            "saltenv": source_file.saltenv,
            "id": self.minion_id,
        }
        ctx.update(template_vars(source_file, sls))
        if extra:
            ctx.update(extra)
        return ctx

    def merge(self, old: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
        return merge.merge_into(old, new, self.o.strategy, self.o.merge_lists)

    # -- the compile ------------------------------------------------------------------
    def compile(self, ext: bool) -> PillarResult:
        merged_top = self.read_top()
        ext_first = bool(self.opts.get("ext_pillar_first", False))
        pillar: dict[str, Any] = {}
        if ext and ext_first:
            # drivers never see the caller's pillar override (SECURITY.md, class 11)
            ext_data = self.ext_pillar({})
            if self.hard_failure:
                return self.failed_result()
            self.template_pillar = self.merge(deepcopy(ext_data), self.override) if self.override else ext_data
            self._salt = None
            sls_data = self.render_pillar(merged_top, self.template_pillar)
            pillar = self.merge(deepcopy(ext_data), sls_data)
        else:
            pillar = self.render_pillar(merged_top, self.template_pillar)
            if ext:
                pillar = self.ext_pillar(pillar)
                if self.hard_failure:
                    return self.failed_result()
        if self.opts.get("pillar_opts", False):
            master = {k: v for k, v in self.opts.items() if k not in _PILLAR_OPTS_SKIP and not k.startswith("__")}
            pillar["master"] = deepcopy(master)
            if self.track:
                self.contributions.append(Contribution("pillar_opts", "pillar_opts", None, {"master": master},
                                                       strategy="replace"))
        if self.messages:
            pillar["_errors"] = list(self.messages)
        if self.override:
            pillar = self.merge(pillar, self.override)
            if self.track:
                self.contributions.append(Contribution("override", "pillar override", None, self.override,
                                                       strategy=self.o.strategy))
        return PillarResult(pillar, self.errors, self.contributions, self.o.strategy,
                            merge_lists=self.o.merge_lists)

    def failed_result(self) -> PillarResult:
        """ext_pillar_fail_hard: no data at all, only the errors and why the compile stopped."""
        text = (f"Pillar of minion {self.minion_id} not compiled: ext_pillar {self.hard_failure} failed and "
                "ext_pillar_fail_hard is true")
        self.fail(CompileError(EXT_PILLAR_ERROR, text), text)
        return PillarResult({"_errors": list(self.messages)}, self.errors, self.contributions, self.o.strategy,
                            failed=True, merge_lists=self.o.merge_lists)

    def pillar_envs(self) -> list[str]:
        envs = ["base"] + [e for e in self.o.source.saltenvs() if e != "base"]
        if self.pillarenv:
            return [self.pillarenv] if self.pillarenv in self.o.source.saltenvs() else []
        if self.o.strategy == "none":
            only = self.saltenv or "base"
            return [only] if only in envs else []
        return envs

    def read_top(self) -> top.MergedTop:
        top_name = str(self.opts.get("state_top") or "top.sls")
        if top_name.startswith("salt://"):
            top_name = top_name[len("salt://"):]
        tops, errors = top.read_tops(self.o.renderer, self.pillar_envs(), lambda f: self.context(f, None),
                                     top_name, stop_at_failure=True)
        for err in errors:
            self.fail(err, f"Rendering Primary Top file failed, render error: {err}")
        return top.merge_pillar_tops(tops)

    def render_pillar(self, merged_top: top.MergedTop, pillar_for_match: Mapping[str, Any]) -> dict[str, Any]:
        minion = match.Minion(self.minion_id, self.grains, pillar_for_match)
        nodegroups = self.opts.get("nodegroups") or {}
        matches, errors = top.match_top(merged_top, minion, nodegroups, only_env=self.pillarenv, dedupe=True)
        for err in errors:
            self.fail(err)
        pillar: dict[str, Any] = {}
        env_order = list(self.opts.get("env_order") or [])
        ordered = [e for e in env_order if e in matches] + [e for e in matches if e not in env_order]
        for env in ordered:
            mods: dict[str, Any] = {}
            for matched in matches[env]:
                for sls in top.expand_sls(self.o.source, env, matched.sls):
                    via = (IncludeLink("top file", matched.display, matched.line),) if self.track else ()
                    data = self.render_sls(sls, env, mods, None, [], matched, via=via)
                    if data is None:
                        continue
                    if not isinstance(data, dict):
                        continue
                    pillar = self.merge(pillar, data)
        return pillar

    def render_sls(self, sls: str, env: str, mods: dict[str, Any], defaults: Mapping[str, Any] | None,
                   chain: list[str], origin: top.Matched | None = None, where: tuple[Any, ...] | None = None,
                   via: tuple[IncludeLink, ...] = ()) -> Any:
        """Render one sls with its includes merged in; None when it has no data.

        Tracked (``via`` is how it was reached), each sls's own data is recorded
        as a Contribution after its includes', which is the order they merge in.
        """
        display, line = (origin.display, origin.line) if origin else (where or (None, None))
        try:
            found = find_sls(self.o.source, env, sls)
        except CompileError as exc:  # e.g. a symlink leading out of the roots: name who asked for it
            self.fail(CompileError(exc.kind, f"SLS '{sls}': {exc.message}", exc.file or display, exc.line or line))
            return None
        if found is None:
            if env not in self.o.source.saltenvs():
                if origin is not None:  # as Salt: one error per top-file sls of an env without pillar_roots
                    text = f"No matching pillar environment for environment '{env}' found"
                    self.fail(CompileError(MISSING_SLS, f"{text} (no pillar_roots for '{env}')", display, line),
                              text)
                return None
            if origin is not None and origin.ignore_missing:
                return None
            text = f"Specified SLS '{sls}' in environment '{env}' is not available on the salt master"
            self.fail(CompileError(MISSING_SLS, text, display, line), text)
            return None
        context = self.context(found, sls, defaults)
        try:
            rendered = self.o.renderer.render(found, context, track=self.track)
        except CompileError as exc:
            detail = f"Rendering SLS '{sls}' failed: {_tidy(exc.message)}"
            safe = f"Rendering SLS '{sls}' failed. Please see master log for details."
            err = CompileError(exc.kind, detail, exc.file, exc.line)
            self.fail(err, safe if self.safe_errors else err.salt_message())
            mods[sls] = None
            return None
        state = rendered.data
        mods[sls] = state
        if not state:
            return state
        if not isinstance(state, dict):
            text = f"SLS '{sls}' does not render to a dictionary"
            self.fail(CompileError(NOT_A_DICT, f"{text} (it renders to a {type(state).__name__})",
                                   found.display, 1), text)
            return state
        state = dict(state)
        includes = state.pop("include", None)
        own_contribution = None
        if self.track:
            own_contribution = Contribution("sls", f"{env}:{sls}", found.display, deepcopy(state),
                                            rendered.places, list(via), strategy=self.o.strategy,
                                            exact=rendered.exact)
            self.rendered[(env, sls)] = own_contribution
        if includes is None:
            if own_contribution:
                self.contributions.append(own_contribution)
            return state
        include_line = rendered.lines.get(("include",))
        if not isinstance(includes, list):
            text = f"Include Declaration in SLS '{sls}' is not formed as a list"
            self.fail(CompileError(NOT_A_DICT, text, found.display, include_line), text)
            if own_contribution:
                self.contributions.append(own_contribution)
            return state
        merged: dict[str, Any] | None = None
        for item in includes:
            sub_defaults: Mapping[str, Any] | None = None
            key = None
            if isinstance(item, dict) and item:
                sub_sls, options = next(iter(item.items()))
                options = options if isinstance(options, dict) else {}
                sub_defaults = options.get("defaults") or {}
                key = options.get("key")
            else:
                sub_sls = item
            sub_sls = str(sub_sls)
            try:
                resolved = resolve_relative(sub_sls, sls, found.relpath.endswith("/init.sls")
                                            or found.relpath == "init.sls")
            except CompileError as exc:
                self.fail(CompileError(exc.kind, exc.message, found.display, include_line))
                continue
            for target in self.include_targets(env, sub_sls, resolved):
                if target in chain + [sls]:
                    cycle = " -> ".join(chain + [sls, target])
                    self.fail(CompileError(INCLUDE_CYCLE, f"Include cycle in pillar: {cycle}",
                                           found.display, include_line))
                    continue
                first = len(self.contributions)
                link = (IncludeLink(f"{env}:{sls}", found.display, include_line),) if self.track else ()
                if target in mods:
                    nstate = deepcopy(mods[target])
                    if isinstance(nstate, dict):
                        nstate.pop("include", None)
                        if self.track:
                            self.record_again(env, target, via + link)
                else:
                    nstate = self.render_sls(target, env, mods, sub_defaults, chain + [sls],
                                             where=(found.display, include_line), via=via + link)
                if not nstate or not isinstance(nstate, dict):
                    continue
                if key:
                    nstate = merge.nest_under(str(key), nstate)
                    if self.track:
                        for contribution in self.contributions[first:]:
                            contribution.nest = tuple(str(key).split(":")) + contribution.nest
                merged = nstate if merged is None else self.merge(merged, nstate)
        if own_contribution:
            self.contributions.append(own_contribution)
        return state if merged is None else self.merge(merged, state)

    def record_again(self, env: str, sls: str, via: tuple[IncludeLink, ...]) -> None:
        """Tracked: an sls rendered before is included again; its own data merges once more (as in Salt)."""
        before = self.rendered.get((env, sls))
        if before is None:
            return
        self.contributions.append(Contribution(
            "sls", before.label, before.display, deepcopy(before.data), before.places, list(via),
            strategy=before.strategy, exact=before.exact,
            note="rendered earlier; its data is merged again where it is included"))

    def include_targets(self, env: str, name: str, resolved: str) -> list[str]:
        """The sls an include entry names, as Salt finds them.

        Salt first looks the name up with its leading dots stripped and '/' read as '.'
        (so `.shared` also includes a top-level `shared`, and `apps/common` is `apps.common`),
        then looks up the resolved relative name; globs expand in both lookups.
        """
        targets: list[str] = []
        if name.startswith(".") or "/" in name:
            targets.extend(self.existing_sls(env, name.lstrip(".").replace("/", ".")))
        targets.extend(t for t in self.existing_sls(env, resolved) if t not in targets)
        return targets or [resolved]

    def existing_sls(self, env: str, pattern: str) -> list[str]:
        if any(ch in pattern for ch in "*?["):
            return fnmatch.filter(top.list_sls(self.o.source, env), pattern)
        try:
            return [pattern] if pattern and find_sls(self.o.source, env, pattern) is not None else []
        except CompileError:
            return [pattern]  # rendering it reports the error

    # -- ext_pillar -------------------------------------------------------------------
    def ext_pillar(self, pillar: dict[str, Any]) -> dict[str, Any]:
        """Call the configured drivers in order, each seeing the pillar so far; merge what they return."""
        entries = self.opts.get("ext_pillar") or []
        if not isinstance(entries, list):
            self.fail(CompileError(EXT_PILLAR_ERROR, 'The "ext_pillar" option is malformed (it must be a list)'))
            return pillar
        excluded = set(self.opts.get("exclude_ext_pillar") or [])
        for entry in entries:
            if not isinstance(entry, dict) or not entry:
                self.fail(CompileError(EXT_PILLAR_ERROR, 'The "ext_pillar" option is malformed: each entry must '
                                       "be a one-key mapping {driver: arguments}"))
                return pillar
            for name, args in entry.items():
                if name in excluded:
                    continue
                ok, data = self.call_driver(str(name), args, pillar)
                if not ok:
                    if self.fail_hard:
                        self.hard_failure = str(name)
                        return pillar
                    continue
                if data:
                    pillar = self.merge(pillar, data)
                    if self.track:
                        self.contributions.append(Contribution("ext_pillar", str(name), None, data,
                                                               strategy=self.o.strategy))
        return pillar

    def driver_failed(self, name: str, detail: str, file: str | None = None, line: int | None = None) -> None:
        self.fail(CompileError(EXT_PILLAR_ERROR, f"Failed to load ext_pillar {name} for minion {self.minion_id}: "
                               f"{detail}", file, line))

    def call_driver(self, name: str, args: Any, pillar: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """(succeeded, data) of one driver call; every failure becomes one _errors entry.

        The driver gets a copy of the pillar, and the loader (runtime.ext_loader) gives one of
        the grains to a driver that takes them: whatever it does to them (even after a timeout
        abandoned it) cannot reach this compile.
        """
        driver = self.o.drivers(name)
        if driver is None:
            self.fail(CompileError(EXT_PILLAR_ERROR, f"ext_pillar interface named {name} is unavailable "
                                   f"(minion {self.minion_id}): no driver '{name}' in the ext_pillar package or "
                                   "in <extension_modules>/pillar/"))
            return False, None
        extra: dict[str, Any] = {"grains": self.grains} if getattr(driver, "accepts_grains", False) else {}
        if getattr(driver, "accepts_envs", False):  # the opts a driver gets carry this compile's environments
            extra["envs"] = {"saltenv": self.saltenv, "pillarenv": self.pillarenv}
        seen = deepcopy(pillar)
        try:
            if isinstance(args, dict):
                result = driver(self.minion_id, seen, **args, **extra)
            elif isinstance(args, list):
                result = driver(self.minion_id, seen, *args, **extra)
            else:
                result = driver(self.minion_id, seen, args, **extra)
        except CompileError as exc:
            self.driver_failed(name, exc.message, exc.file, exc.line)
            return False, None
        except Exception as exc:  # noqa: BLE001 - a driver failure must not stop the compile
            self.driver_failed(name, f"{type(exc).__name__}: {exc}")
            return False, None
        if result is None:
            return True, None
        if not isinstance(result, dict):
            self.driver_failed(name, f"it returned a {type(result).__name__}, not a dict; its data was ignored")
            return False, None
        return True, result


_RELATIVE = re.compile(r"^(\.+)(.*)$")


def resolve_relative(name: str, current_sls: str, current_is_init: bool) -> str:
    """'.x' and '..x' include names, resolved against the including sls (Salt's state rules)."""
    found = _RELATIVE.match(name)
    if not found:
        return name
    dots, rest = found.groups()
    parts = current_sls.split(".")
    if current_is_init:
        parts.append("init")
    if len(dots) > len(parts):
        raise CompileError(MISSING_SLS, f"Attempted relative include of '{name}' within SLS '{current_sls}' "
                           "goes beyond top level package")
    return ".".join(parts[: -len(dots)] + [rest]) if rest else ".".join(parts[: -len(dots)])


def _tidy(message: str) -> str:
    # keep library wording from looking like another error kind
    return message.replace("not found", "missing")
