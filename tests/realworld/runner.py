"""Run saltpan on the real-world formula cases (tests/realworld/cases, copied from ../shared/realworld)
and compare with what real Salt 3008.3 gave for them (each case's expected/<view>.json).

A case is an unmodified saltstack-formulas formula (states/<formula>/), its pillar.example
(pillar/example.sls), a Debian 12 minion (grains.yaml) and a masterless config.yaml.  The views:

  pillar      saltpan compile --show pillar       (Salt: pillar.raw)
  highstate   saltpan compile --show highstate    (Salt: state.show_highstate)
  lowstate    saltpan compile --show lowstate     (Salt: state.show_lowstate)
  apply_test  saltpan call --local state.apply test=True   (per state: the result only)

plus the `live` form of highstate/lowstate: `saltpan call --local state.show_highstate|show_lowstate`,
which renders on this host like salt-call --local did (host-reading functions run for real).

Normalisation is the conformance oracle's (tests/conformance/oracle.py), with the realworld set's
volatile values (salt['status.time'] stamps, prometheus' random priority) replaced on both sides.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import yaml

from tests.conformance import oracle

CASES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
VIEWS = ("pillar", "highstate", "lowstate", "apply_test")
RUN_TIMEOUT = 300

VOLATILE = [
    (re.compile(r"\.backup@\d\d-\d\d-\d\d_\d\d:\d\d:\d\d"), ".backup@<status.time>"),
    (re.compile(r"(update-alternatives --install \S+ \S+ \S+) \d+"), r"\1 <random>"),
]
VOLATILE_KEYS = {"prometheus": {"altpriority", "priority"}}


def case_names() -> list[str]:
    return sorted(name for name in os.listdir(CASES_DIR) if os.path.isfile(os.path.join(CASES_DIR, name, "config.yaml")))


def scrub(obj: Any, keys: frozenset[str] | set[str] = frozenset()) -> Any:
    if isinstance(obj, str):
        for rx, rep in VOLATILE:
            obj = rx.sub(rep, obj)
        return obj
    if isinstance(obj, list):
        return [scrub(x, keys) for x in obj]
    if isinstance(obj, dict):
        return {scrub(k, keys): ("<random>" if k in keys and isinstance(v, (int, str)) else scrub(v, keys))
                for k, v in obj.items()}
    return obj


def load_case(name: str) -> oracle.Case:
    path = os.path.join(CASES_DIR, name)
    with open(os.path.join(path, "config.yaml"), encoding="utf-8") as fh:
        config = yaml.safe_load(fh) or {}
    with open(os.path.join(path, "grains.yaml"), encoding="utf-8") as fh:
        config["grains"] = dict(yaml.safe_load(fh) or {})
    return oracle.Case(name, path, VIEWS, {}, config)


def expected(name: str, view: str) -> Any:
    with open(os.path.join(CASES_DIR, name, "expected", f"{view.removeprefix('live_').removeprefix('offline_')}.json"), encoding="utf-8") as fh:
        return json.load(fh)


def argv(view: str, ws: oracle.Workspace) -> list[str]:
    base = [sys.executable, "-m", "runtime"]
    if view == "apply_test":
        return [*base, "call", "--config", ws.config_path, "--local", "state.apply", "test=True", "--out", "json"]
    if view.startswith("live_"):
        return [*base, "call", "--config", ws.config_path, "--local", f"state.show_{view[5:]}", "--out", "json"]
    offline = ["--offline"] if view.startswith("offline_") else []
    return [*base, "compile", "--config", ws.config_path, "--minion", ws.minion_id, *offline,
            "--grains", os.path.join(ws.case_dir, "grains.yaml"), "--show", view.removeprefix("offline_"),
            "--out", "json"]


def norm_apply(data: Any) -> Any:
    if not isinstance(data, dict):
        return oracle.errors_doc(data)
    return {tag: {"result": ret.get("result")} if isinstance(ret, dict) else {"__malformed__": ret}
            for tag, ret in data.items()}


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str


def run(name: str, view: str) -> Outcome:
    """Run one (formula, view) and compare with Salt's expected output."""
    case = load_case(name)
    with oracle.materialise(case) as ws:
        try:
            proc = subprocess.run(argv(view, ws), cwd=ws.tmp, env=oracle.run_env(), umask=oracle.RUN_UMASK,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                  check=False)
            stdout, stderr = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired:
            return Outcome(False, f"timed out after {RUN_TIMEOUT}s")
        pairs = ws.path_placeholders()
        keys = frozenset(VOLATILE_KEYS.get(name, ()))
        parsed = oracle.parse_json_output(stdout)
        if parsed is None:
            messages = oracle.replace_paths(oracle.stderr_messages(stderr), pairs)
            doc: Any = oracle.errors_doc(messages) if messages else {"__errors__": ["crash"]}
        else:
            data = scrub(oracle.replace_paths(oracle.unwrap(parsed), pairs), keys)
            base = view.removeprefix("live_").removeprefix("offline_")
            doc = norm_apply(data) if base == "apply_test" else oracle.NORMALISERS[base](data)
    want = expected(name, view)
    tail = "\n".join(stderr.strip().splitlines()[-4:])
    if want == {"__errors__": ["crash"]}:
        # Salt itself crashed: a clean error passes, a crash or a result does not
        kinds = doc.get("__errors__") if isinstance(doc, dict) and len(doc) == 1 else None
        if not kinds or "crash" in kinds:
            return Outcome(False, f"Salt crashed here; expected a clean error, got {str(doc)[:200]}\n{tail}")
        return Outcome(True, "")
    if oracle.same(want, doc):
        return Outcome(True, "")
    return Outcome(False, "\n".join(oracle.differences(want, doc)) + f"\nsaltpan stderr:\n{tail}")
