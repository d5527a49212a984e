"""Apply ordered low chunks: requisites at run time, test mode, Salt's result shape.

The executor walks ``Lowstate.runs`` in order.  Before each run it looks at the
results of what the run depends on (``Lowstate.deps``) and decides, as Salt
3008 does, whether the state runs, is skipped ("One or more requisite failed",
"none of the onchanges reqs changed", ...), or runs and then fires its
``mod_watch``.  ``prereq`` targets are first run in test mode; the state that
declared the prereq runs only if that test run predicts changes.  ``listen``
watchers fire their ``mod_watch`` after every state ran.  ``failhard`` stops
the run at the first failure: later states are absent from the return.

Results are keyed ``state_|-id_|-name_|-fun`` with ``result``, ``changes``,
``comment``, ``name``, ``__id__``, ``__sls__``, ``__run_num__``,
``start_time`` and ``duration``.
"""

from __future__ import annotations

import datetime
import inspect
import logging
import os
import random
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.requisites import Lowstate, tag
from runtime import cmdrun
from runtime.states import Missing, StateContext, resolve
from runtime.states.registry import runs_own_checks

log = logging.getLogger(__name__)

# Keys of a low chunk that are not arguments of the state function.
INTERNAL_KEYS = frozenset({
    "state", "fun", "order", "name_order", "require", "require_any", "watch", "watch_any", "prereq", "prereq_in",
    "onfail", "onfail_any", "onfail_all", "onfail_stop", "onchanges", "onchanges_any", "listen", "listen_in",
    "require_in", "watch_in", "onfail_in", "onchanges_in", "use", "use_in", "prerequired", "check_cmd",
    "cmd_opts_exclude", "failhard", "retry", "parallel", "reload_modules", "reload_grains", "reload_pillar",
    "runas_password", "no_log", "fire_event", "saltenv", "umask", "aggregate",
})


def _now() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


def _fake_timing() -> tuple[str, float]:
    start = _now()
    return start.astimezone().time().isoformat(), 0.0


@dataclass
class Executor:
    """One state run."""

    lowstate: Lowstate
    make_context: Callable[[dict, bool], StateContext]
    grains: Mapping[str, Any] = field(default_factory=dict)
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    test: bool = False
    failhard: bool = False
    # custom state functions synced to this host (runtime.modules.custom), looked up before saltpan's
    custom_states: Callable[[str, str], Callable[..., dict] | None] | None = None
    # more about a state whose function cannot be found (where it is declared, the closest name):
    # a line added to Salt's message
    explain_missing: Callable[[dict], str] | None = None
    running: dict[str, dict] = field(default_factory=dict)
    pre: dict[str, dict] = field(default_factory=dict)
    run_num: int = 0

    # -- public ----------------------------------------------------------------
    def apply(self) -> dict[str, dict]:
        for index, run in enumerate(self.lowstate.runs):
            chunk = self.lowstate.chunks[run.chunk]
            if not run.prereq_check and tag(chunk) in self.running:
                continue
            self.call_run(index)
            if not run.prereq_check and self.should_stop(chunk):
                return self.running
        self.call_listen()
        return self.running

    def should_stop(self, chunk: dict) -> bool:
        if self.test:
            return False
        if not chunk.get("failhard", self.failhard):
            return False
        ret = self.running.get(tag(chunk))
        return ret is not None and bool(ret) and ret["result"] is False

    # -- requisites ----------------------------------------------------------------
    def requisite_status(self, index: int) -> tuple[str, dict[str, list[dict]]]:
        reqs: dict[str, list[dict]] = {}
        for kind, dep in self.lowstate.deps[index]:
            reqs.setdefault(kind, []).append(self.lowstate.chunks[self.lowstate.runs[dep].chunk])
        stats: set[str] = set()
        for kind, chunks in reqs.items():
            req_stats: set[str] = set()
            base = kind.removesuffix("_any").removesuffix("_all")
            source = self.pre if base == "prereq" else self.running
            for chunk in chunks:
                ret = source.get(tag(chunk))
                if ret is None:
                    req_stats.add("unmet")
                    continue
                if ret.get("skip_req"):
                    req_stats.add("skip_req")
                if base == "onfail":
                    if ret["result"] is True:
                        req_stats.add("onfail")
                        continue
                elif base == "onchanges":
                    req_stats.add("onchanges" if ret["result"] is False or not ret["changes"] else "onchangesmet")
                    continue
                elif ret["result"] is False:
                    req_stats.add("fail")
                    continue
                if base == "watch" and ret["changes"]:
                    req_stats.add("change")
                    continue
                if base == "prereq":
                    req_stats.add("premet" if ret["result"] is None else "pre")
                elif ret.get("__state_ran__", True):
                    req_stats.add("met")
            if kind.endswith("_any") or kind == "onfail":
                if ("met" in req_stats or "change" in req_stats) and "fail" in req_stats:
                    req_stats.discard("fail")
                if "onchangesmet" in req_stats:
                    req_stats.discard("onchanges")
                    req_stats.discard("fail")
                if "onfail" in req_stats and "met" in req_stats:
                    req_stats.discard("onfail")
            if kind.endswith("_all") and "onfail" in req_stats:
                req_stats.discard("met")
            stats |= req_stats
        return _status(stats), reqs

    # -- running -----------------------------------------------------------------
    def call_run(self, index: int) -> None:
        run = self.lowstate.runs[index]
        low = self.lowstate.chunks[run.chunk]
        key = tag(low)
        check = run.prereq_check  # the test-mode run of a prereq target, before the state that prereqs it
        status, reqs = self.requisite_status(index)
        if status == "met":
            self.record(key, self.call(low, prereq=True) if check else self.call(low), check)
        elif status == "unmet":
            self.not_run(low, key, False, "One or more requisite did not run (internal ordering error)", check)
        elif status == "skip_req":
            self.not_run(low, key, True, "State was not run because requisites were skipped by another state",
                         check)
        elif status == "skip_watch" and not check:
            ret = self.call(low)
            ret["comment"] = f"{ret['comment']} mod_watch was not run because requisites were skipped by " \
                             "another state"
            self.running[key] = ret
        elif status == "fail":
            if key in self.pre and not check:
                ret = dict(self.pre[key])
                ret["changes"] = {}
                ret["__run_num__"] = self.next_run_num()
                for k in ("__sls__", "__id__", "name"):
                    ret[k] = low.get(k)
                self.running[key] = ret
            else:
                failed = sorted({f"{c.get('__sls__')}.{c['__id__']}" for chunks in reqs.values() for c in chunks
                                 if (self.pre.get(tag(c)) or self.running.get(tag(c)) or {}).get("result") is False})
                self.not_run(low, key, False, f"One or more requisite failed: {', '.join(failed)}", check)
        elif status == "change" and not check:
            ret = self.call(low)
            if not ret["changes"] and not ret.get("skip_watch", False):
                watch_low = dict(low)
                watch_low["sfun"] = low["fun"]
                watch_low["fun"] = "mod_watch"
                watch_low["__reqs__"] = reqs
                ret = self.call(watch_low)
            self.running[key] = ret
        elif status == "pre":
            self.not_run(low, key, True, "No changes detected", check)
        elif status == "onfail":
            self.not_run(low, key, True, "State was not run because onfail req did not change", check)
        elif status == "onchanges":
            self.not_run(low, key, True, "State was not run because none of the onchanges reqs changed", check)
        else:  # "change" / "skip_watch" for a prereq check: a plain test-mode run
            self.record(key, self.call(low, prereq=True), check)

    def record(self, key: str, ret: dict, check: bool) -> None:
        if check:
            self.pre[key] = ret
        else:
            self.running[key] = ret

    def next_run_num(self) -> int:
        num = self.run_num
        self.run_num += 1
        return num

    def not_run(self, low: dict, key: str, ok: bool, comment: str, check: bool = False) -> None:
        """A state that does not run: Salt records it (and a prereq check's outcome) as a result."""
        start, duration = _fake_timing()
        ret: dict[str, Any] = {"changes": {}, "result": ok, "duration": duration, "start_time": start, "comment": comment,
               "__state_ran__": False, "__run_num__": self.next_run_num(),
               **{k: low.get(k) for k in ("__sls__", "__id__", "name")}}
        self.running[key] = ret
        if check:
            self.pre[key] = ret

    def call(self, low: dict, prereq: bool = False, attempt: int = 1) -> dict:
        start = _now()
        test = True if prereq else self.test
        custom = self.custom_states(str(low["state"]), str(low["fun"])) if self.custom_states else None
        func = custom if custom is not None else resolve(str(low["state"]), str(low["fun"]))
        ret: dict[str, Any]
        if isinstance(func, Missing):
            ret = {"result": False, "name": low.get("name"), "changes": {},
                   "comment": f"State '{low['state']}.{low['fun']}' was not found in SLS '{low.get('__sls__')}'\n"
                              f"Reason: {func.reason}\n"
                              + (self.explain_missing(low) if self.explain_missing is not None else "")}
            return self.verify_failure(ret, prereq)
        missing = _missing_params(func, low)
        if missing:
            ret = {"result": False, "name": low.get("name"), "changes": {},
                   "comment": "\n".join(f"Missing parameter {p} for state {low['state']}.{low['fun']}"
                                        for p in missing)}
            return self.verify_failure(ret, prereq)
        ret = {"result": False, "name": low["name"], "changes": {}}
        try:
            outcome = None
            if not runs_own_checks(str(low["state"])):
                outcome = cmdrun.evaluate_conditions(low, self.grains, self.functions)
            if outcome is not None and outcome.skip:
                ret = {"result": True, "name": low["name"], "changes": {}, "comment": outcome.comment,
                       "skip_watch": outcome.skip_watch}
            else:
                ctx = self.make_context(low, test)
                ctx.low = low
                ctx.lowstate = self.lowstate.chunks
                ctx.watch_changes = self.watch_changes(low)
                kwargs = {k: v for k, v in low.items() if k not in INTERNAL_KEYS and not k.startswith("__")
                          and k != "name"}
                if outcome is not None:
                    for key in cmdrun.CHECK_KEYS:
                        kwargs.pop(key, None)
                old_umask = os.umask(low["__umask__"]) if "__umask__" in low else None
                try:
                    ret = func(ctx, low["name"], **kwargs)
                finally:
                    if old_umask is not None:
                        os.umask(old_umask)
        except Exception:  # noqa: BLE001 - a failing state never stops the run
            ret = {"result": False, "name": low.get("name"), "changes": {},
                   "comment": f"An exception occurred in this state: {traceback.format_exc()}"}
        if not isinstance(ret, dict):
            ret = {"result": False, "name": low.get("name"), "changes": {},
                   "comment": f"State function returned {type(ret).__name__}, not a dict"}
        ret.setdefault("changes", {})
        ret.setdefault("comment", "")
        if isinstance(ret.get("comment"), list):
            ret["comment"] = "\n".join(str(c) for c in ret["comment"])
        if prereq:
            return ret
        ret = self.finish(ret, low, start)
        if "retry" in low and not test:
            ret = self.retry(low, ret, attempt)
        return ret

    def verify_failure(self, ret: dict, prereq: bool) -> dict:
        """A chunk that cannot run at all (unknown function, missing argument): Salt's bare shape."""
        if not prereq:
            ret["__run_num__"] = self.next_run_num()
        return ret

    def retry(self, low: dict, ret: dict, attempt: int) -> dict:
        spec = low["retry"] if isinstance(low["retry"], dict) else {}
        until = spec.get("until", True)
        attempts = int(spec.get("attempts", 2))
        interval = float(spec.get("interval", 30)) + random.randint(0, int(spec.get("splay", 0) or 0))
        if ret["result"] == until or attempts <= attempt:
            return ret
        time.sleep(interval)
        again = self.call(low, attempt=attempt + 1)
        again["comment"] = (f'Attempt {attempt}: Returned a result of "{ret["result"]}", with the following '
                            f'comment: "{ret["comment"]}"\n{again["comment"]}')
        return again

    def finish(self, ret: dict, low: dict, start: datetime.datetime) -> dict:
        ret["__sls__"] = low.get("__sls__")
        ret["__run_num__"] = self.next_run_num()
        finish = _now()
        ret["start_time"] = start.astimezone().time().isoformat()
        delta = finish - start
        ret["duration"] = (delta.seconds * 1000000 + delta.microseconds) / 1000.0
        ret["__id__"] = low["__id__"]
        return ret

    def watch_changes(self, low: dict) -> list[str]:
        """'state: id' of each watched requisite that changed (what test.mod_watch reports)."""
        reqs = low.get("__reqs__") or {}
        out = []
        for chunk in reqs.get("watch", []) + reqs.get("watch_any", []):
            ret = self.running.get(tag(chunk))
            if ret and ret.get("changes"):
                out.append(f"{chunk['state']}: {chunk['__id__']}")
        return out

    # -- listen ------------------------------------------------------------------
    def call_listen(self) -> None:
        chunks: list[dict[str, Any]] = []
        for run in self.lowstate.runs:  # execution order, each chunk once
            chunk = self.lowstate.chunks[run.chunk]
            if not run.prereq_check and all(chunk is not c for c in chunks):
                chunks.append(chunk)
        refs = {(c["state"], c["__id__"], c["name"]): c for c in chunks}
        listeners: list[tuple[tuple, list]] = []
        for chunk in chunks:
            if "listen" in chunk:
                listeners.append(((chunk["state"], chunk["__id__"], chunk["name"]), chunk["listen"]))
            for item in chunk.get("listen_in") or []:
                if isinstance(item, dict):
                    for key, val in item.items():
                        listeners.append(((key, val, "lookup"), [{chunk["state"]: chunk["__id__"]}]))
        watchers: list[dict] = []
        errors: dict[str, dict] = {}
        for who, targets in listeners:
            for target in targets if isinstance(targets, list) else [targets]:
                if not isinstance(target, dict):
                    hit = next((c for c in chunks if target in (c["__id__"], c["name"])), None)
                    if hit is None:
                        continue
                    target = {hit["state"]: hit["__id__"]}
                for lkey, lval in target.items():
                    if not any(lkey == ref[0] and lval in ref for ref in refs):
                        errors[_listen_error_tag(lkey, lval)] = {
                            "comment": f"Referenced state {lkey}: {lval} does not exist",
                            "name": f"listen_{lkey}:{lval}", "result": False, "changes": {}}
                        continue
                    to_tags = [tag(data) for ref, data in refs.items() if lkey == ref[0] and lval in ref]
                    for to_tag in to_tags:
                        if to_tag not in self.running or not self.running[to_tag]["changes"]:
                            continue
                        if not any(who[0] == ref[0] and who[1] in ref for ref in refs):
                            errors[_listen_error_tag(who[0], who[1])] = {
                                "comment": f"Referenced state {who[0]}: {who[1]} does not exist",
                                "name": f"listen_{who[0]}:{who[1]}", "result": False, "changes": {}}
                            continue
                        for data in (d for ref, d in refs.items() if who[0] == ref[0] and who[1] in ref):
                            low = {k: v for k, v in data.items() if k not in _REQUISITE_KEYS}
                            low["sfun"] = data["fun"]
                            low["fun"] = "mod_watch"
                            low["__id__"] = f"listener_{data['__id__']}"
                            if tag(low) not in (tag(w) for w in watchers):
                                watchers.append(low)
        for low in watchers:
            key = tag(low)
            if key not in self.running:
                self.running[key] = self.call(low)
        for key, ret in errors.items():
            ret["__run_num__"] = self.next_run_num()
            self.running[key] = ret


_REQUISITE_KEYS = frozenset({"require", "require_any", "watch", "watch_any", "prereq", "onfail", "onfail_any",
                             "onfail_all", "onfail_stop", "onchanges", "onchanges_any", "listen", "prerequired"})


def _listen_error_tag(state: str, sid: str) -> str:
    return f"Listen_Error_|-listen_{sid}_|-listen_{state}_|-Listen_Error"


def _status(stats: set[str]) -> str:
    if "unmet" in stats:
        return "unmet"
    if "fail" in stats:
        return "fail"
    if "skip_req" in stats and stats & {"onchangesmet", "premet"}:
        return "skip_req"
    if "skip_req" in stats and "change" in stats:
        return "skip_watch"
    if "pre" in stats:
        return "met" if "premet" in stats else "pre"
    if "onfail" in stats and "onchangesmet" not in stats:
        return "onfail"
    if "onchanges" in stats and "onchangesmet" not in stats:
        return "onchanges"
    if "change" in stats:
        return "change"
    if "onfail" in stats:
        return "onfail"
    return "met"


def _missing_params(func: Callable[..., Any], low: Mapping[str, Any]) -> list[str]:
    try:
        params = list(inspect.signature(func).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params
            if p.default is inspect.Parameter.empty
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            and p.name not in low]


def result_summary(results: Mapping[str, dict]) -> dict[str, int]:
    """Counts for the highstate summary."""
    ok = sum(1 for r in results.values() if r.get("result") is not False)
    changed = sum(1 for r in results.values() if r.get("result") is not False and r.get("changes"))
    return {"succeeded": ok, "changed": changed, "failed": len(results) - ok, "total": len(results)}


def log_exception(message: str) -> None:
    log.debug(message, exc_info=True)
