"""The state compiler, second half: high data -> verified, ordered low chunks.

Steps, as Salt takes them: apply ``extend`` (arguments replaced, requisite
lists appended), verify the structure, materialise the ``*_in`` requisites and
``use``/``use_in`` onto their targets, apply ``exclude``, expand ``names``
into one chunk per name, then order the chunks over their requisites
(compiler.requisites).  Every error names the file and line of the state ID.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from compiler.datacopy import deepcopy
from compiler.errors import (
    BAD_STATE_DATA,
    REQUISITE_CYCLE,
    REQUISITE_NOT_FOUND,
    CompileError,
)
from compiler.highstate import Origin
from compiler.requisites import REQ_TYPES, CycleError, Lowstate, RequisiteError, order_chunks

REQUISITE_KEYWORDS = frozenset(REQ_TYPES) | {"onfail_stop"}
REQ_IN = ("require_in", "watch_in", "onfail_in", "onchanges_in", "use", "use_in", "prereq_in")
REQ_IN_ALL = set(REQ_IN) | {"require", "watch", "prereq", "onfail", "onfail_stop", "onchanges"}

@dataclass
class LowResult:
    lowstate: Lowstate | None
    errors: list[CompileError] = field(default_factory=list)


class _Where:
    def __init__(self, origins: dict[str, Origin]):
        self.origins = origins

    def of(self, sid: Any) -> tuple[str | None, int | None]:
        origin = self.origins.get(str(sid))
        return (origin.file, origin.line) if origin else (None, None)


def _first_key(item: dict[str, Any]) -> Any:
    return next(iter(item))


def find_name(name: str, state: str, high: dict[str, Any], strict: bool = False) -> list[tuple[str, str]]:
    """IDs whose `state` declaration has this id or `name:` argument."""
    found = []
    check = state in high.get(name, {}) if strict else True
    if name in high and check:
        found.append((name, state))
    elif state == "sls":
        for nid, item in high.items():
            if isinstance(item, dict) and item.get("__sls__") == name:
                found.append((nid, next(iter(item))))
    else:
        for nid, body in high.items():
            if not isinstance(body, dict) or state not in body or not isinstance(body[state], list):
                continue
            for arg in body[state]:
                if isinstance(arg, dict) and len(arg) == 1 and arg[_first_key(arg)] == name:
                    found.append((nid, state))
    return found


def _sls_ids(sls: str, high: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for nid, body in high.items():
        if not isinstance(body, dict) or body.get("__sls__") != sls:
            continue
        out.extend((nid, st) for st in body if not st.startswith("__"))
    return out


def _state_args(sid: str, state: str, high: dict[str, Any]) -> set[str]:
    args = set()
    for item in high.get(sid, {}).get(state, []) or []:
        if isinstance(item, dict) and len(item) == 1:
            args.add(_first_key(item))
    return args


class _Compile:
    def __init__(self, high: dict[str, Any], origins: dict[str, Origin], has_mod_watch: Callable[[str], bool]):
        self.high = deepcopy(high)
        self.where = _Where(origins)
        self.has_mod_watch = has_mod_watch
        self.errors: list[CompileError] = []

    def fail(self, kind: str, message: str, sid: Any = None, file: str | None = None) -> None:
        loc_file, loc_line = self.where.of(sid) if sid is not None else (file, None)
        self.errors.append(CompileError(kind, message, loc_file or file, loc_line))

    # -- extend --------------------------------------------------------------------
    def reconcile_extend(self, strict: bool = False) -> None:
        high = self.high
        if "__extend__" not in high:
            return
        exclude_sls = []
        for exc in high.get("__exclude__", []):
            if isinstance(exc, str):
                exclude_sls.append(exc)
            elif isinstance(exc, dict) and exc.get("sls"):
                exclude_sls.append(exc["sls"])
        for ext_chunk in high.pop("__extend__"):
            for name, body in ext_chunk.items():
                if not isinstance(body, dict):
                    continue
                state_type = next((k for k in body if not str(k).startswith("__")), None)
                if state_type is None:
                    continue
                if name not in high or state_type not in high[name]:
                    ids = find_name(name, state_type, high, strict)
                    if len(ids) != 1:
                        self.fail(REQUISITE_NOT_FOUND if strict else BAD_STATE_DATA,
                                  f"Cannot extend ID '{name}' in '{body.get('__env__', 'base')}:"
                                  f"{body.get('__sls__', 'base')}'. It is not part of the high state. This is likely "
                                  "due to a missing include statement or an incorrectly typed ID. Ensure that a "
                                  f"state with an ID of '{name}' is available in environment "
                                  f"'{body.get('__env__', 'base')}' and to SLS '{body.get('__sls__', 'base')}'",
                                  name)
                        continue
                    name = ids[0][0]
                if body.get("__sls__") in exclude_sls:
                    continue
                for state, run in body.items():
                    if str(state).startswith("__"):
                        continue
                    if state not in high[name]:
                        high[name][state] = deepcopy(run)
                        continue
                    self._extend_args(high[name][state], run)

    @staticmethod
    def _extend_args(target: list[Any], run: list[Any]) -> None:
        for arg in run:
            update = False
            for index, val in enumerate(list(target)):
                if isinstance(arg, str) and isinstance(val, str):
                    target[index] = arg
                    update = True
                    continue
                if isinstance(arg, dict) and isinstance(val, dict) and arg and val:
                    argfirst = _first_key(arg)
                    if argfirst == _first_key(val):
                        if argfirst in REQUISITE_KEYWORDS and isinstance(val[argfirst], list):
                            val[argfirst].extend(deepcopy(arg[argfirst]))
                        else:
                            target[index] = deepcopy(arg)
                        update = True
                    if argfirst == "name" and _first_key(val) == "names":
                        target[index] = deepcopy(arg)
            if not update:
                target.append(deepcopy(arg))

    # -- verify ----------------------------------------------------------------------
    def verify(self) -> None:
        for sid, body in self.high.items():
            if not isinstance(sid, str):
                self.fail(BAD_STATE_DATA, f"ID '{sid}' in SLS '{body.get('__sls__')}' is not formed as a string, but "
                          f"is type {type(sid).__name__}. It may need to be quoted.", sid)
                continue
            if sid.startswith("__"):
                continue
            if not isinstance(body, dict):
                self.fail(BAD_STATE_DATA, f"The type {sid} in {body} is not formatted as a dictionary", sid)
                continue
            sls = body.get("__sls__")
            for state, args in body.items():
                if str(state).startswith("__"):
                    continue
                if args is None:
                    self.fail(BAD_STATE_DATA, f"ID '{sid}' in SLS '{sls}' contains a short declaration ({state}) "
                              "with a trailing colon. When not passing any arguments to a state, the colon must "
                              "be omitted.", sid)
                    continue
                if not isinstance(args, list):
                    self.fail(BAD_STATE_DATA, f"State '{sid}' in SLS '{sls}' is not formed as a list (got "
                              f"{type(args).__name__}: arguments of a state are a list of single-key mappings)", sid)
                    continue
                self._verify_args(sid, sls, str(state), args)

    def _verify_args(self, sid: str, sls: Any, state: str, args: list[Any]) -> None:
        funs = [state.split(".", 1)[1]] if "." in state else []
        for arg in args:
            if isinstance(arg, str):
                funs.append(arg)
                if " " in arg.strip():
                    self.fail(BAD_STATE_DATA, f'The function "{arg}" in state "{sid}" in SLS "{sls}" has '
                              "whitespace, a function with whitespace is not supported, perhaps this is an "
                              'argument that is missing a ":"', sid)
            elif isinstance(arg, dict):
                if not arg:
                    continue
                first = _first_key(arg)
                if first == "names" and not isinstance(arg[first], list):
                    self.fail(BAD_STATE_DATA, f"The 'names' argument in state '{sid}' in SLS '{sls}' needs to be "
                              "formed as a list", sid)
                if first in REQUISITE_KEYWORDS:
                    self._verify_requisite(sid, sls, first, arg[first])
                    # as Salt's verify_high: only a requisite argument must be a single-key mapping (any
                    # other argument with several keys is passed on as it is)
                    if len(arg) != 1:
                        self.fail(BAD_STATE_DATA, f"Multiple dictionaries defined in argument of state '{sid}' in "
                                  f"SLS '{sls}'", sid)
            else:
                self.fail(BAD_STATE_DATA, f"Argument {arg!r} of state '{sid}' in SLS '{sls}' is neither a function "
                          "name nor a single-key mapping", sid)
        if not funs:
            self.fail(BAD_STATE_DATA, f"No function declared in state '{sid}' in SLS '{sls}'", sid)
        elif len(funs) > 1:
            self.fail(BAD_STATE_DATA, f"Too many functions declared in state '{sid}' in SLS '{sls}'. Please choose "
                      "one of the following: " + ", ".join(funs), sid)

    def _verify_requisite(self, sid: str, sls: Any, kind: str, reqs: Any) -> None:
        if not isinstance(reqs, list):
            self.fail(BAD_STATE_DATA, f"The {kind} statement in state '{sid}' in SLS '{sls}' needs to be formed as "
                      "a list", sid)
            return
        for req in reqs:
            if isinstance(req, str):
                req = {"id": req}
            if not isinstance(req, dict) or len(req) != 1:
                self.fail(BAD_STATE_DATA, f"Requisite declaration {req} in state {sid} in SLS {sls} is not formed "
                          "as a single key dictionary", sid)
                continue
            key, val = next(iter(req.items()))
            if "." in str(key):
                self.fail(BAD_STATE_DATA, f"Invalid requisite type '{key}' in state '{sid}', in SLS '{sls}'. "
                          f"Requisite types must not contain dots, did you mean '{str(key).split('.')[0]}'?", sid)
            if not isinstance(val, Hashable):
                self.fail(BAD_STATE_DATA, f'Illegal requisite "{val}" in SLS "{sls}", please check your syntax.',
                          sid)

    # -- requisite_in / use ----------------------------------------------------------
    def requisite_in(self) -> None:
        high = self.high
        extend: dict[str, dict[str, Any]] = {}

        def add_req(target_id: str, target_state: str, rkey: str, state: str, sid: str, body: dict[str, Any]) -> None:
            entry = extend.setdefault(target_id, {})
            decl = entry.setdefault(target_state, [])
            entry["__env__"] = body.get("__env__")
            entry["__sls__"] = body.get("__sls__")
            for item in decl:
                if isinstance(item, dict) and _first_key(item) == rkey:
                    item[rkey].append({state: sid})
                    return
            decl.append({rkey: [{state: sid}]})

        for sid, body in list(high.items()):
            if not isinstance(body, dict) or str(sid).startswith("__"):
                continue
            for state, run in body.items():
                if str(state).startswith("__") or not isinstance(run, list):
                    continue
                for arg in run:
                    if not isinstance(arg, dict) or not arg:
                        continue
                    key = _first_key(arg)
                    if key not in REQ_IN:
                        continue
                    rkey = key.split("_")[0]
                    items = arg[key]
                    if isinstance(items, dict):
                        for tstate, tname in items.items():
                            add_req(tname, str(tstate).split(".")[0], rkey, state, sid, body)
                        continue
                    if not isinstance(items, list):
                        continue
                    hinges: list[tuple[str, str]] = []
                    for ind in items:
                        if not isinstance(ind, dict):
                            resolved = self._resolve_bare(ind)
                            if resolved is None:
                                continue
                            ind = resolved
                        if not ind:
                            continue
                        pstate = _first_key(ind)
                        pname = ind[pstate]
                        if pstate == "sls":
                            hinges = _sls_ids(pname, high)
                        else:
                            hinges.append((pname, str(pstate).split(".")[0]))
                        for name, tstate in hinges:
                            if key == "use_in":
                                self._use(src_id=sid, src_state=state, dst_name=name, dst_state=tstate,
                                          extend=extend, into_dst=True)
                            elif key == "use":
                                self._use(src_id=sid, src_state=state, dst_name=name, dst_state=tstate,
                                          extend=extend, into_dst=False)
                            else:
                                add_req(name, tstate, rkey, state, sid, body)
        high["__extend__"] = [{k: v} for k, v in extend.items()]
        self.reconcile_extend(strict=True)

    def _resolve_bare(self, ind: Any) -> dict[str, Any] | None:
        high = self.high
        if ind in high and isinstance(high[ind], dict):
            states = [x for x in high[ind] if not str(x).startswith("__")]
            return {states[0]: ind} if states else None
        for nid, body in high.items():
            if not isinstance(body, dict):
                continue
            for st in (s for s in body if not str(s).startswith("__")):
                for j in body[st] if isinstance(body[st], list) else []:
                    if isinstance(j, dict) and j.get("name") == ind:
                        return {st: nid}
        return None

    def _use(self, src_id: str, src_state: str, dst_name: str, dst_state: str, extend: dict[str, Any], into_dst: bool) -> None:
        high = self.high
        for ext_id, req_state in find_name(dst_name, dst_state, high, strict=True):
            if not ext_id:
                continue
            if into_dst:  # use_in: the declaring state's args go to the target
                target_id, target_state, source_id, source_state = ext_id, req_state, src_id, src_state
            else:  # use: the target's args come to the declaring state
                target_id, target_state, source_id, source_state = src_id, src_state, ext_id, req_state
            ignore = REQ_IN_ALL | _state_args(target_id, target_state, high)
            decl = extend.setdefault(target_id, {}).setdefault(target_state, [])
            for arg in high[source_id][source_state]:
                if not isinstance(arg, dict) or len(arg) != 1:
                    continue
                first = _first_key(arg)
                if first in ignore or first in ("name", "names"):
                    continue
                decl.append(arg)

    # -- exclude -------------------------------------------------------------------
    def apply_exclude(self) -> None:
        high = self.high
        if "__exclude__" not in high:
            return
        ex_sls, ex_id = set(), set()
        for exc in high.pop("__exclude__"):
            if isinstance(exc, str):
                ex_sls.add(exc)
            elif isinstance(exc, dict) and len(exc) == 1:
                key = _first_key(exc)
                if key == "sls":
                    ex_sls.add(exc["sls"])
                elif key == "id":
                    ex_id.add(exc["id"])
        if ex_sls:
            for sid, body in high.items():
                if str(sid).startswith("__") or not isinstance(body, dict):
                    continue
                sls = body.get("__sls__") or ""
                if sls and any(fnmatch.fnmatch(sls, str(pattern)) for pattern in ex_sls):
                    ex_id.add(sid)
        for sid in ex_id:
            high.pop(sid, None)

    # -- chunks ----------------------------------------------------------------------
    def chunks(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for sid, body in self.high.items():
            if str(sid).startswith("__") or not isinstance(body, dict):
                continue
            for state, run in body.items():
                if str(state).startswith("__") or not isinstance(run, list):
                    continue
                chunk: dict[str, Any] = {"state": state, "name": sid}
                for key in ("__sls__", "__env__", "__sls_included_from__"):
                    if key in body:
                        chunk[key] = body[key]
                chunk["__id__"] = sid
                funcs: list[str] = []
                names: list[Any] = []
                for arg in run:
                    if isinstance(arg, str):
                        if arg not in funcs:
                            funcs.append(arg)
                        continue
                    if isinstance(arg, dict):
                        for key, val in arg.items():
                            if key == "names":
                                for entry in val or []:
                                    if entry not in names:
                                        names.append(entry)
                            elif key == "state":
                                continue
                            elif key == "name" and not isinstance(val, str):
                                chunk["name"] = sid
                            else:
                                chunk[key] = val
                if not funcs:
                    continue
                if names:
                    for name_order, entry in enumerate(names, start=1):
                        live = deepcopy(chunk)
                        if isinstance(entry, dict):
                            low_name = next(iter(entry))
                            live["name"] = low_name
                            for extra in entry[low_name] or []:
                                if isinstance(extra, dict):
                                    live.update(extra)
                        else:
                            live["name"] = entry
                        live["name_order"] = name_order
                        live["fun"] = funcs[0]
                        out.append(live)
                else:
                    live = deepcopy(chunk)
                    live["fun"] = funcs[0]
                    out.append(live)
        return out


def compile_lowstate(high: dict[str, Any], origins: dict[str, Origin], has_mod_watch: Callable[[str], bool],
                     high_checks_only: bool = False) -> LowResult:
    """Salt's compile_low_chunks: extend, verify, requisite_in, exclude, chunks, order.

    has_mod_watch(state) tells whether a state module has a mod_watch (its ``watch`` requisites
    stay; elsewhere they become ``require``): the caller knows the state modules, the compiler
    does not.
    high_checks_only stops after the checks on the high data (extend, verify, requisite_in): what
    Salt's show_lowstate still reports about high data whose rendering had errors.
    """
    run = _Compile(high, origins, has_mod_watch)
    run.reconcile_extend()
    run.verify()
    if not run.errors:
        run.requisite_in()
    run.apply_exclude()
    if run.errors or high_checks_only:
        return LowResult(None, run.errors)
    chunks = run.chunks()
    lowstate, problems = order_chunks(chunks, run.has_mod_watch)
    errors: list[CompileError] = []
    for problem in problems:
        if isinstance(problem, RequisiteError):
            file, line = run.where.of(problem.chunk.get("__id__"))
            errors.append(CompileError(REQUISITE_NOT_FOUND, problem.message, file, line))
        elif isinstance(problem, CycleError):
            members = ", ".join(
                f"({_chunk_str(dependent)}, '{kind}', {_chunk_str(dependency)})"
                for dependent, kind, dependency in problem.members)
            member_places = [run.where.of(dependent["__id__"]) for dependent, _, _ in problem.members]
            places = [f"{f}:{ln}" for f, ln in sorted({place for place in member_places if place[0]},
                                                       key=lambda place: (place[0], place[1] or 0))]
            first = member_places[0] if member_places else (None, None)
            errors.append(CompileError(REQUISITE_CYCLE, f"Recursive requisites were found: {members}"
                                       + (f" (declared at {', '.join(places)})" if places else ""), *first))
    if errors:
        return LowResult(None, errors)
    return LowResult(lowstate, [])


def _chunk_str(chunk: dict[str, Any]) -> str:
    parts = {"SLS": chunk.get("__sls__"), "ID": chunk["__id__"]}
    if chunk["__id__"] != chunk["name"]:
        parts["NAME"] = chunk["name"]
    return str(parts)
