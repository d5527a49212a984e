"""Top files: read them across saltenvs, merge them, match them for one minion.

Pillar and states read top files differently (as Salt does):

* pillar: every environment's top file is read (or only ``pillarenv``'s), and
  entries merge per (environment, target): a later top file's ``base: '*'``
  replaces an earlier one's; targets are sorted by their ``order``.
* states: ``top_file_merging_strategy`` decides - ``merge`` (base is
  authoritative, other envs' top files contribute only their own section),
  ``same`` (each env only from its own top file, ``default_top`` as fallback)
  or ``merge_all`` (every section of every top file, sls lists unioned).

``match_top`` turns a merged top into ``{saltenv: [sls, ...]}`` for one minion.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler import match
from compiler.errors import BAD_STATE_DATA, MISSING_SLS, RENDER_ERROR, CompileError
from compiler.render import Renderer
from compiler.roots import FileSource, SourceFile, find_sls


@dataclass
class TopFile:
    """One rendered top file."""

    saltenv: str  # the environment whose roots held it
    data: dict[str, Any]
    display: str
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)


@dataclass
class TopEntry:
    """The items listed under one target, with where they came from."""

    items: list[Any]
    display: str
    line: int | None

    @property
    def match_type(self) -> str:
        kind = "compound"
        for item in self.items:
            if isinstance(item, dict) and "match" in item:
                kind = str(item["match"])
        return kind

    @property
    def order(self) -> int:
        value = 0
        for item in self.items:
            if isinstance(item, dict) and "order" in item:
                try:
                    value = int(item["order"])
                except (TypeError, ValueError):
                    value = 0
        return value

    @property
    def ignore_missing(self) -> bool:
        return any(isinstance(i, dict) and i.get("ignore_missing") for i in self.items)

    @property
    def sls(self) -> list[Any]:
        return [i for i in self.items if isinstance(i, str) or (isinstance(i, dict) and _is_env_ref(i))]


def _is_env_ref(item: dict[str, Any]) -> bool:
    return len(item) == 1 and not ({"match", "order", "ignore_missing", "subfilter"} & set(item))


MergedTop = dict[str, dict[str, TopEntry]]


def read_tops(renderer: Renderer, envs: list[str], context_for: Callable[[SourceFile], dict[str, Any]],
              top_name: str = "top.sls", stop_at_failure: bool = False) -> tuple[list[TopFile], list[CompileError]]:
    """Render the top file of each env (and the top files they include).

    stop_at_failure: a top file that fails to render ends the reading of further environments'
    top files (Salt's pillar does so: the tops read so far are still used).
    """
    source = renderer.source
    tops: list[TopFile] = []
    errors: list[CompileError] = []
    for env in envs:
        found = _get_quiet(source, env, top_name, errors)
        if found is None:
            continue
        top = _render_top(renderer, found, context_for, errors)
        if top is None:
            if stop_at_failure:
                break
            continue
        tops.append(top)
        done: set[str] = set()
        pending = list(top.data.pop("include", None) or [])
        while pending:
            pattern = pending.pop(0)
            if not isinstance(pattern, str):
                continue
            for sls in expand_sls(source, env, pattern):
                if sls in done:
                    continue
                done.add(sls)
                included = find_sls(source, env, sls)
                if included is None:
                    errors.append(CompileError(MISSING_SLS, f"Specified SLS '{sls}' in environment '{env}' "
                                               "is not available (included from the top file)",
                                               found.display))
                    continue
                inc = _render_top(renderer, included, context_for, errors)
                if inc is not None:
                    pending.extend(inc.data.pop("include", None) or [])
                    tops.append(inc)
    return tops, errors


def _get_quiet(source: FileSource, env: str, name: str, errors: list[CompileError]) -> SourceFile | None:
    try:
        return source.get(env, name)
    except CompileError as exc:
        errors.append(exc)
        return None


def _render_top(renderer: Renderer, found: SourceFile, context_for: Callable[[SourceFile], dict[str, Any]],
                errors: list[CompileError]) -> TopFile | None:
    try:
        rendered = renderer.render(found, context_for(found), want_lines=True)
    except CompileError as exc:
        errors.append(CompileError(exc.kind, f"Rendering top file failed: {exc.message}", exc.file, exc.line))
        return None
    data = rendered.data
    if data is None:
        return TopFile(found.saltenv, {}, found.display, rendered.lines)
    if not isinstance(data, dict):
        errors.append(CompileError(RENDER_ERROR, "Top data was not formed as a dict "
                                   "(a top file renders to {saltenv: {target: [sls, ...]}})", found.display, 1))
        return None
    problems = verify_top(data, found.display, rendered.lines)
    if problems:
        errors.extend(problems)
        data = {env: targets for env, targets in data.items()
                if env == "include" or isinstance(targets, dict)}
        for env, targets in data.items():
            if env != "include":
                data[env] = {t: v for t, v in targets.items() if isinstance(v, list)}
    return TopFile(found.saltenv, data, found.display, rendered.lines)


def verify_top(data: dict[str, Any], display: str, lines: dict[tuple[Any, ...], int]) -> list[CompileError]:
    errors = []
    for env, targets in data.items():
        if env == "include":
            continue
        if not isinstance(targets, dict):
            errors.append(CompileError(BAD_STATE_DATA, f"The top file matches for saltenv {env} are not formatted "
                                       "as a dict", display, lines.get((env,))))
            continue
        for tgt, items in targets.items():
            if not isinstance(items, list):
                errors.append(CompileError(
                    BAD_STATE_DATA, f"Malformed topfile: sls declarations for target {tgt!r} in saltenv "
                    f"{env!r} are not formed as a list (got {type(items).__name__})",
                    display, lines.get((env, tgt))))
    return errors


def _entry(top: TopFile, env: str, tgt: str) -> TopEntry:
    return TopEntry(list(top.data[env][tgt]), top.display, top.lines.get((env, str(tgt))))


def merge_pillar_tops(tops: list[TopFile]) -> MergedTop:
    """Pillar: entries merge per (env, target), later top files win; sorted by order."""
    merged: MergedTop = {}
    for top in tops:
        for env, targets in top.data.items():
            if env == "include":
                continue
            for tgt in targets:
                merged.setdefault(env, {})[tgt] = _entry(top, env, tgt)
    return {env: dict(sorted(targets.items(), key=lambda kv: kv[1].order)) for env, targets in merged.items()}


def merge_state_tops(tops: list[TopFile], strategy: str = "merge", default_top: str = "base",
                     envs: list[str] | None = None) -> MergedTop:
    """States: apply top_file_merging_strategy."""
    by_env: dict[str, list[TopFile]] = {}
    for top in tops:
        by_env.setdefault(top.saltenv, []).append(top)
    merged: MergedTop = {}
    if strategy == "same":
        for cenv in envs or list(by_env):
            ctops = [t for t in by_env.get(cenv, []) if t.data]
            if not ctops:
                ctops = [t for t in by_env.get(default_top, []) if t.data]
            for top in ctops:
                for tgt in top.data.get(cenv, {}) or {}:
                    merged.setdefault(cenv, {})[tgt] = _entry(top, cenv, tgt)
        return merged
    if strategy == "merge_all":
        for top in tops:
            for env, targets in top.data.items():
                if env == "include":
                    continue
                for tgt in targets:
                    new = _entry(top, env, tgt)
                    old = merged.setdefault(env, {}).get(tgt)
                    if old is None:
                        merged[env][tgt] = new
                        continue
                    match_item = next((i for i in reversed(new.items) if isinstance(i, dict) and "match" in i),
                                      None) or next((i for i in old.items if isinstance(i, dict) and "match" in i),
                                                    None)
                    states = [i for i in old.items if isinstance(i, str)]
                    states += [i for i in new.items if isinstance(i, str) and i not in states]
                    merged[env][tgt] = TopEntry(([match_item] if match_item else []) + states, old.display, old.line)
        return merged
    # "merge" (default): base authoritative, other envs only their own section
    for top in by_env.get("base", []):
        for env, targets in top.data.items():
            if env == "include":
                continue
            for tgt in targets:
                merged.setdefault(env, {})[tgt] = _entry(top, env, tgt)
    base_defined = set(merged)
    for cenv, ctops in by_env.items():
        if cenv == "base":
            continue
        for top in ctops:
            for env, targets in top.data.items():
                if env != cenv or env in base_defined:
                    continue
                for tgt in targets:
                    merged.setdefault(env, {})[tgt] = _entry(top, env, tgt)
    return merged


@dataclass
class Matched:
    """One sls selected by a top file for a minion."""

    sls: str
    saltenv: str
    display: str
    line: int | None
    ignore_missing: bool = False


def match_top(top: MergedTop, minion: match.Minion, nodegroups: Mapping[str, Any],
              only_env: str | None = None, dedupe: bool = True,
              known_envs: list[str] | None = None) -> tuple[dict[str, list[Matched]], list[CompileError]]:
    """The sls each environment gives this minion, in top-file order."""
    out: dict[str, list[Matched]] = {}
    errors: list[CompileError] = []
    for env, targets in top.items():
        if only_env and env != only_env:
            continue
        for tgt, entry in targets.items():
            try:
                hit = match.match_one(entry.match_type, tgt, minion, nodegroups)
            except match.MatchError as exc:
                errors.append(CompileError(exc.kind, f"top file target {tgt!r}: {exc.message}",
                                           entry.display, entry.line))
                continue
            if not hit:
                continue
            bucket = out.setdefault(env, [])
            for item in entry.sls:
                if isinstance(item, dict):
                    item_env, item_sls = next(iter(item.items()))
                    if known_envs is not None and item_env not in known_envs:
                        continue
                    target_bucket = out.setdefault(item_env, [])
                    target_bucket.append(Matched(str(item_sls), item_env, entry.display, entry.line))
                    continue
                if dedupe and any(m.sls == item for m in bucket):
                    continue
                bucket.append(Matched(item, env, entry.display, entry.line, entry.ignore_missing))
    return out, errors


def list_sls(source: FileSource, saltenv: str) -> list[str]:
    """Every sls name available in saltenv (a/b.sls -> a.b, a/init.sls -> a)."""
    names = []
    for path in source.list_files(saltenv):
        if not path.endswith(".sls"):
            continue
        if path.endswith("/init.sls"):
            names.append(path[: -len("/init.sls")].replace("/", "."))
        elif path != "init.sls":
            names.append(path[: -len(".sls")].replace("/", "."))
    return names


def expand_sls(source: FileSource, saltenv: str, pattern: str) -> list[str]:
    """A top/include sls name, expanded when it is a glob (``roles.*``)."""
    if any(ch in pattern for ch in "*?["):
        found = fnmatch.filter(list_sls(source, saltenv), pattern)
        return found or [pattern]
    return [pattern]
