"""The state compiler, first half: top file -> sls files -> high data.

``StateCompiler.top`` is Salt's ``state.show_top``, ``highstate`` is
``state.show_highstate`` (the high data *before* extend and exclude are applied:
``__extend__`` and ``__exclude__`` are top-level keys), and ``lowstate``
(in compiler.lowstate) turns it into ordered low chunks.

Rendering follows Salt: includes are rendered depth first and merged into the
including sls (an ID defined twice with different bodies is a conflict naming
both files), ``extend``/``exclude`` are collected, ``file.managed:`` becomes
``file: [..., managed]``, and with ``state_auto_order`` every state gets an
``order`` from a counter starting at 10000 in rendering order.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler import match, salt_functions, top
from compiler.errors import (
    BAD_STATE_DATA,
    CONFLICTING_ID,
    MISSING_SLS,
    NOT_A_DICT,
    RENDER_ERROR,
    CompileError,
)
from compiler.render import Renderer, template_vars
from compiler.roots import FileSource, SourceFile, find_sls

AUTO_ORDER_START = 10000


@dataclass
class Origin:
    """Where an ID was declared."""

    file: str
    line: int | None
    sls: str
    saltenv: str


@dataclass
class HighResult:
    high: dict[str, Any]
    errors: list[CompileError]
    origins: dict[str, Origin] = field(default_factory=dict)
    top: dict[str, list[str]] = field(default_factory=dict)


class StateCompiler:
    """Compiles top, high data and low chunks for minions (reusable: templates are cached)."""

    def __init__(self, opts: Mapping[str, Any], source: FileSource, renderer: Renderer | None = None,
                 functions: salt_functions.FunctionsFactory | None = None):
        self.opts = opts
        self.source = source
        self.renderer = renderer or Renderer(source, opts.get("renderer") or "jinja|yaml",
                                             opts.get("renderer_blacklist"), opts.get("renderer_whitelist"))
        # the execution functions templates call as salt['mod.fun'] (the caller's registry)
        self.functions = functions or salt_functions.no_functions

    def session(self, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                saltenv: str | None = None) -> _Session:
        return _Session(self, minion_id, grains, pillar, saltenv)

    def top(self, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
            saltenv: str | None = None) -> tuple[dict[str, list[str]], list[CompileError]]:
        sess = self.session(minion_id, grains, pillar, saltenv)
        matches = sess.top_matches()
        return {env: [m.sls for m in items] for env, items in matches.items()}, sess.errors

    def highstate(self, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                  saltenv: str | None = None, mods: list[str] | None = None) -> HighResult:
        sess = self.session(minion_id, grains, pillar, saltenv)
        if mods is None:
            matches = sess.top_matches()
        else:
            env = saltenv or self.opts.get("saltenv") or "base"
            matches = {env: [top.Matched(m, env, "<command line>", None) for m in mods]}
        high = sess.render_highstate(matches)
        return HighResult(high, sess.errors, sess.origins, {e: [m.sls for m in ms] for e, ms in matches.items()})


class _Session:
    """One minion's top + render pass."""

    def __init__(self, owner: StateCompiler, minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                 saltenv: str | None):
        self.o = owner
        self.opts = owner.opts
        self.minion_id = minion_id
        self.grains = grains
        self.pillar = pillar
        self.saltenv = saltenv if saltenv is not None else (self.opts.get("saltenv") or None)
        self.errors: list[CompileError] = []
        self.origins: dict[str, Origin] = {}
        self.declared: dict[str, list[Origin]] = {}
        self.iorder = AUTO_ORDER_START
        self.auto_order = bool(self.opts.get("state_auto_order", True))
        self._salt = salt_functions.SaltFunctions(owner.functions(minion_id, grains, pillar, self.opts))
        self._avail: dict[str, list[str]] = {}
        self._available: set[str] | None = None

    # -- helpers ------------------------------------------------------------------
    def context(self, source_file: SourceFile, sls: str | None) -> dict[str, Any]:
        ctx = {
            "grains": self.grains,
            "opts": self.opts,
            "pillar": self.pillar,
            "salt": self._salt,
            "saltenv": source_file.saltenv,
            "id": self.minion_id,
        }
        ctx.update(template_vars(source_file, sls))
        return ctx

    def avail(self, env: str) -> list[str]:
        if env not in self._avail:
            self._avail[env] = top.list_sls(self.o.source, env) if env in self.o.source.saltenvs() else []
        return self._avail[env]

    def expand(self, env: str, pattern: str) -> list[str]:
        if any(ch in pattern for ch in "*?["):
            return fnmatch.filter(self.avail(env), pattern) or [pattern]
        return [pattern]

    def available(self, env: str) -> bool:
        """Salt's available environments: base, and those of envs() (env_order filters them)."""
        if self._available is None:
            self._available = {"base", *self.envs()}
        return env in self._available

    def envs(self) -> list[str]:
        known = self.o.source.saltenvs()
        envs = ["base"] + [e for e in known if e != "base"]
        order = []
        for env in self.opts.get("env_order") or []:
            if env not in order:
                order.append(env)
        if order:
            return [e for e in order if e in known] if known else order
        return envs

    # -- top --------------------------------------------------------------------
    def top_matches(self) -> dict[str, list[top.Matched]]:
        top_name = str(self.opts.get("state_top") or "top.sls")
        if top_name.startswith("salt://"):
            top_name = top_name[len("salt://"):]
        strategy = str(self.opts.get("top_file_merging_strategy") or "merge")
        if self.saltenv:
            read_envs = [self.saltenv]
        elif self.opts.get("state_top_saltenv"):
            read_envs = [str(self.opts["state_top_saltenv"])]
        else:
            read_envs = self.envs()
        tops, errors = top.read_tops(self.o.renderer, read_envs, lambda f: self.context(f, None), top_name)
        self.errors.extend(errors)
        if self.saltenv:
            merged = top.merge_state_tops(tops, "merge_all")
        else:
            merged = top.merge_state_tops(tops, strategy, str(self.opts.get("default_top") or "base"), read_envs)
        minion = match.Minion(self.minion_id, self.grains, self.pillar)
        matches, errors = top.match_top(merged, minion, self.opts.get("nodegroups") or {}, only_env=self.saltenv,
                                        dedupe=False, known_envs=[e for e in self.o.source.saltenvs()
                                                                  if self.available(e)])
        self.errors.extend(errors)
        return matches

    # -- rendering ----------------------------------------------------------------
    def render_highstate(self, matches: dict[str, list[top.Matched]]) -> dict[str, Any]:
        high: dict[str, Any] = {}
        mods: set[str] = set()
        for env, items in matches.items():
            for matched in items:
                if not self.available(env):
                    # Salt reports the env, then still renders the sls from the roots
                    self.fail(MISSING_SLS, f"No matching salt environment for environment '{env}' found",
                              matched.display, matched.line)
                for sls in self.expand(env, matched.sls):
                    if f"{env}:{sls}" in mods:
                        continue
                    state = self.render_state(sls, env, mods, matches, origin=matched)
                    if state is not None:
                        self.merge_included(high, state)
        if "__extend__" in high:
            unique: list[Any] = []
            for ext in high["__extend__"]:
                for item in ext.items():
                    if item not in unique:
                        unique.append(item)
            high["__extend__"] = [{k: v} for k, v in unique]
        return high

    def fail(self, kind: str, message: str, file: str | None = None, line: int | None = None) -> None:
        self.errors.append(CompileError(kind, message, file, line))

    def render_state(self, sls: str, env: str, mods: set[str], matches: dict[str, Any], origin: top.Matched | None = None,
                     where: tuple[str | None, int | None] = (None, None)) -> dict[str, Any] | None:
        try:
            found = find_sls(self.o.source, env, sls) if env in self.o.source.saltenvs() else None
        except CompileError as exc:
            self.errors.append(exc)
            return None
        if found is None:
            if origin is not None:
                self.fail(MISSING_SLS, f"No matching sls found for '{sls}' in env '{env}'", origin.display,
                          origin.line)
            else:
                self.fail(MISSING_SLS, f"Specified SLS {sls} in saltenv {env} is not available on the salt master "
                          "or through a configured fileserver", *where)
            return None
        try:
            rendered = self.o.renderer.render(found, self.context(found, sls))
        except CompileError as exc:
            mods.add(f"{env}:{sls}")
            self.fail(exc.kind, f"Rendering SLS '{env}:{sls}' failed: {exc.message}", exc.file, exc.line)
            return None
        mods.add(f"{env}:{sls}")
        state = rendered.data
        if not state:
            return {}
        if not isinstance(state, dict):
            self.fail(NOT_A_DICT, f"SLS {sls} does not render to a dictionary (it renders to a "
                      f"{type(state).__name__})", found.display, 1)
            if isinstance(state, (list, str)):
                self.fail(RENDER_ERROR, f"Error when rendering state with contents: {state!r}", found.display, 1)
            return None
        lines = rendered.lines
        state = dict(state)
        include: list[Any] = []
        if "include" in state:
            if not isinstance(state["include"], list):
                self.fail(BAD_STATE_DATA, f"Include Declaration in SLS {sls} is not formed as a list",
                          found.display, lines.get(("include",)))
                state.pop("include")
            else:
                include = state.pop("include")
        self.handle_extend(state, sls, env, found, lines)
        self.handle_exclude(state, sls, found, lines)
        self.handle_decls(state, sls, env, found, lines)
        is_init = found.relpath == "init.sls" or found.relpath.endswith("/init.sls")
        for inc in include:
            self.render_include(inc, state, sls, env, mods, matches, is_init, found.display,
                                lines.get(("include",)))
        if self.auto_order:
            self.handle_iorder(state)
        return state

    def render_include(self, inc: Any, state: dict[str, Any], sls: str, env: str, mods: set[str], matches: dict[str, Any],
                       is_init: bool, display: str, line: int | None) -> None:
        if isinstance(inc, dict) and len(inc) == 1:
            env_key, inc_sls = next(iter(inc.items()))
        else:
            env_key, inc_sls = env, inc
        env_key, inc_sls = str(env_key), str(inc_sls)
        if env_key != "_xenv" and not self.available(env_key):
            self.fail(MISSING_SLS, f"Nonexistent saltenv '{env_key}' found in include of '{inc_sls}' within SLS "
                      f"'{env}:{sls}'", display, line)
            return
        if inc_sls.startswith("."):
            found_rel = re.match(r"^(\.+)(.*)$", inc_sls)
            levels, rest = found_rel.groups() if found_rel else ("", inc_sls)
            parts = sls.split(".") + (["init"] if is_init else [])
            if len(levels) > len(parts):
                self.fail(MISSING_SLS, f"Attempted relative include of '{inc_sls}' within SLS '{env}:{sls}' goes "
                          "beyond top level package", display, line)
                return
            inc_sls = ".".join(parts[: -len(levels)] + [rest])
        if env_key != "_xenv":
            resolved = [env_key] if (env_key in matches or fnmatch.filter(self.avail(env_key), inc_sls)) else []
        else:
            resolved = [e for e in matches if fnmatch.filter(self.avail(e), inc_sls)]
        if len(resolved) == 1 or env in resolved:
            r_env = resolved[0] if len(resolved) == 1 else env
            targets = fnmatch.filter(self.avail(env), inc_sls) or [inc_sls]
            for target in targets:
                if f"{r_env}:{target}" in mods:
                    continue
                nstate = self.render_state(target, r_env, mods, matches, where=(display, line))
                if nstate:
                    for item, body in nstate.items():
                        if item.startswith("__") or not isinstance(body, dict):
                            continue
                        body.setdefault("__sls_included_from__", []).append(sls)
                    self.merge_included(state, nstate)
            return
        if not resolved:
            self.fail(MISSING_SLS, f"Unknown include: Specified SLS {env_key}: {inc_sls} is not available on the "
                      f"salt master in saltenv(s): {', '.join(matches) if env_key == '_xenv' else env_key}",
                      display, line)
        else:
            self.fail(MISSING_SLS, f"Ambiguous include: Specified SLS {env_key}: {inc_sls} is available on the "
                      f"salt master in multiple available saltenvs: {', '.join(resolved)}", display, line)

    def merge_included(self, high: dict[str, Any], state: dict[str, Any]) -> None:
        if "__extend__" in state:
            high.setdefault("__extend__", []).extend(state.pop("__extend__"))
        if "__exclude__" in state:
            high.setdefault("__exclude__", []).extend(state.pop("__exclude__"))
        for sid, body in state.items():
            if sid in high and high[sid] != body:
                old = high[sid]
                places = self.declared.get(str(sid), [])
                where = " and ".join(f"{o.file}:{o.line}" for o in places[:2]) if len(places) > 1 else ""
                last = places[-1] if places else None
                self.fail(CONFLICTING_ID,
                          "Detected conflicting IDs, SLS IDs need to be globally unique. The conflicting ID is "
                          f"'{sid}' and is found in SLS '{old.get('__env__')}:{old.get('__sls__')}' and SLS "
                          f"'{body.get('__env__')}:{body.get('__sls__')}'" + (f" ({where})" if where else ""),
                          last.file if last else None, last.line if last else None)
        high.update(state)

    def handle_extend(self, state: dict[str, Any], sls: str, env: str, found: SourceFile, lines: dict[tuple[Any, ...], int]) -> None:
        if "extend" not in state:
            return
        ext = state.pop("extend")
        if not isinstance(ext, dict):
            self.fail(BAD_STATE_DATA, f"Extension value in SLS '{sls}' is not a dictionary", found.display,
                      lines.get(("extend",)))
            return
        ext = copy.deepcopy(ext)
        for name in list(ext):
            body = ext[name]
            if not isinstance(body, dict):
                self.fail(BAD_STATE_DATA, f"Extension name '{name}' in SLS '{sls}' is not a dictionary",
                          found.display, lines.get(("extend",)))
                del ext[name]
                continue
            body.setdefault("__sls__", sls)
            body.setdefault("__env__", env)
            for key in list(body):
                if key.startswith("_") or not isinstance(body[key], list):
                    continue
                if "." in key:
                    mod, fun = key.split(".", 1)
                    body[mod] = body.pop(key)
                    body[mod].append(fun)
        state.setdefault("__extend__", []).append(ext)

    def handle_exclude(self, state: dict[str, Any], sls: str, found: SourceFile, lines: dict[tuple[Any, ...], int]) -> None:
        if "exclude" not in state:
            return
        exc = state.pop("exclude")
        if not isinstance(exc, list):
            self.fail(BAD_STATE_DATA, f"Exclude Declaration in SLS {sls} is not formed as a list", found.display,
                      lines.get(("exclude",)))
            return
        state.setdefault("__exclude__", []).extend(exc)

    def handle_decls(self, state: dict[str, Any], sls: str, env: str, found: SourceFile, lines: dict[tuple[Any, ...], int]) -> None:
        for name in list(state):
            body = state[name]
            if name in ("__extend__", "__exclude__"):
                continue
            line = lines.get((name,))
            origin = Origin(found.display, line, sls, env)
            self.origins.setdefault(str(name), origin)
            self.declared.setdefault(str(name), []).append(origin)
            if not isinstance(body, dict):
                if isinstance(body, str) and "." in body:
                    mod, fun = body.split(".", 1)
                    state[name] = {"__sls__": sls, "__env__": env, mod: [fun]}
                    continue
                self.fail(BAD_STATE_DATA, f"ID {name} in SLS {sls} is not a dictionary (got "
                          f"{type(body).__name__})", found.display, line)
                del state[name]
                continue
            body = state[name] = dict(body)
            seen: set[str] = set()
            for key in list(body):
                if not isinstance(key, str) or key.startswith("_") or not isinstance(body[key], list):
                    continue
                if "." in key:
                    mod, fun = key.split(".", 1)
                    if mod in seen:
                        self.fail(BAD_STATE_DATA, f"ID '{name}' in SLS '{sls}' contains multiple state declarations "
                                  "of the same type", found.display, line)
                        continue
                    body[mod] = list(body.pop(key))
                    body[mod].append(fun)
                    seen.add(mod)
                    continue
                seen.add(key)
            body.setdefault("__sls__", sls)
            body.setdefault("__env__", env)

    def handle_iorder(self, state: dict[str, Any]) -> None:
        for body in state.values():
            if not isinstance(body, dict):
                continue
            for decl, args in body.items():
                if not isinstance(decl, str) or decl.startswith("_") or not isinstance(args, list):
                    continue
                if any(isinstance(a, dict) and a and next(iter(a)) == "order" for a in args):
                    continue
                args.append({"order": self.iorder})
                self.iorder += 1
