"""Compare saltpan's state functions with real Salt 3008, scenario by scenario (a dev tool).

Not part of the pytest suite (salt-call takes about a second per run). Usage::

    .venv/bin/python tests/states/salt_parity.py [--salt-call /opt/saltvenv/bin/salt-call] [NAME_REGEX...]

Each scenario in ``parity_scenarios.yaml`` seeds a sandbox, applies an sls (``@SB@`` is the
sandbox path) with ``state.sls`` in Salt and by calling saltpan's state functions in file
order, in normal and in test mode, then compares per state: result, changes keys, and
the sandbox manifest (paths, types, modes, contents, symlink targets). Prints one line
per (scenario, mode) and the differences.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from statehelpers import state_calls  # noqa: E402

from runtime.states import StateContext, lookup  # noqa: E402


def seed(sandbox: str, spec: list[dict[str, Any]]) -> None:
    for entry in spec or []:
        path = os.path.join(sandbox, entry["path"])
        kind = entry.get("type", "file")
        if kind == "dir":
            os.makedirs(path, exist_ok=True)
            os.chmod(path, int(str(entry.get("mode", "0755")), 8))
        elif kind == "symlink":
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(entry["target"].replace("@SB@", sandbox), path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(entry.get("content", ""))
            os.chmod(path, int(str(entry.get("mode", "0644")), 8))


def manifest(sandbox: str) -> list[dict[str, Any]]:
    out = []
    for root, dirs, files in os.walk(sandbox):
        for entry in sorted(dirs + files):
            path = os.path.join(root, entry)
            rel = os.path.relpath(path, sandbox)
            st = os.lstat(path)
            item: dict[str, Any] = {"path": rel}
            if os.path.islink(path):
                item.update(type="symlink", target=os.readlink(path).replace(sandbox, "@SB@"))
            elif os.path.isdir(path):
                item.update(type="dir", mode=oct(st.st_mode & 0o7777))
            else:
                with open(path, "rb") as handle:
                    data = handle.read().replace(sandbox.encode(), b"@SB@")
                item.update(type="file", mode=oct(st.st_mode & 0o7777))
                if rel.endswith(".bak") or re.search(r"\.\d{4}-\d\d-\d\d-", rel):
                    item["sha"] = hashlib.sha256(data).hexdigest()[:12]
                else:
                    item["content"] = data.decode("utf-8", errors="replace")
            out.append(item)
    return sorted(out, key=lambda i: i["path"])


def write_roots(roots: str, scenario: dict[str, Any], sandbox: str) -> None:
    for rel, text in (scenario.get("roots") or {}).items():
        path = os.path.join(roots, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, 0o644)
    for spec in scenario.get("build") or []:  # archives made from files of the roots
        base = os.path.join(roots, spec["from"])
        if "tar" in spec:
            import tarfile

            with tarfile.open(os.path.join(roots, spec["tar"]), "w:gz") as tf:
                for member in spec["members"]:
                    tf.add(os.path.join(base, member), member)
        else:
            import zipfile

            with zipfile.ZipFile(os.path.join(roots, spec["zip"]), "w") as zf:
                for member in spec["members"]:
                    top = os.path.join(base, member)
                    for root, _dirs, files in os.walk(top):
                        rel = os.path.relpath(root, base)
                        zf.write(root, rel + "/")
                        for fname in files:
                            zf.write(os.path.join(root, fname), os.path.join(rel, fname))
    with open(os.path.join(roots, "scenario.sls"), "w") as handle:
        handle.write("#!yaml\n" + scenario["sls"].replace("@SB@", sandbox))


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in results.items():
        state_id = value.get("__id__") or key.split("_|-")[1]
        out[state_id] = digest(value)
    return out


def digest(ret: dict[str, Any]) -> dict[str, Any]:
    """What is compared of one state return: result, changes (without pid) and comment."""
    changes = ret["changes"]
    if isinstance(changes, dict):
        changes = {k: v for k, v in changes.items() if k != "pid"}
    return {"result": ret["result"], "changes": changes, "comment": ret.get("comment")}


def _minion_opts(scenario: dict[str, Any], sandbox: str) -> dict[str, Any]:
    """The scenario's extra minion options (``@SB@`` replaced), e.g. ``hosts.file``."""
    return json.loads(json.dumps(scenario.get("minion_opts") or {}).replace("@SB@", sandbox))


def run_salt(salt_call: str, scenario: dict[str, Any], test: bool, tmp: str) -> tuple[dict, list]:
    sandbox, roots, run = (os.path.join(tmp, d) for d in ("sandbox", "roots", "run"))
    for d in (sandbox, roots, run):
        os.makedirs(d)
    seed(sandbox, scenario.get("seed"))
    write_roots(roots, scenario, sandbox)
    conf = os.path.join(tmp, "minion")
    with open(conf, "w") as handle:
        yaml.safe_dump({
            "id": "parity", "file_client": "local", "root_dir": run, "pki_dir": run + "/pki",
            "cachedir": run + "/cache", "sock_dir": run + "/sock", "log_file": run + "/log",
            "file_roots": {"base": [roots]}, "pillar_roots": {"base": [run + "/nopillar"]},
            "grains": {"sandbox": sandbox},
            **_minion_opts(scenario, sandbox),
        }, handle)
    os.makedirs(os.path.join(tmp, "confdir"))
    shutil.move(conf, os.path.join(tmp, "confdir", "minion"))
    cmd = [salt_call, "--local", "-c", os.path.join(tmp, "confdir"), "--out", "json", "state.sls", "scenario"]
    if test:
        cmd.append("test=True")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env={**os.environ, "LC_ALL": "C.UTF-8"})
    data = json.loads(proc.stdout)["local"]
    if not isinstance(data, dict):
        return {"__error__": data}, manifest(sandbox)
    return summarize(data), manifest(sandbox)


def _fetch(roots: str):
    def fetch(url: str, saltenv: str):
        rel = url[len("salt://"):]
        path = os.path.join(roots, rel)
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            return handle.read(), path, os.stat(path).st_mode & 0o7777
    return fetch


def _render(grains: dict[str, Any], roots: str):
    import jinja2

    def render(text: str, engine: str, context: dict[str, Any], display: str) -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(roots), undefined=jinja2.StrictUndefined,
                                 keep_trailing_newline=True)
        return env.from_string(text).render({"grains": grains, "pillar": {}, **context})
    return render


def run_saltpan(scenario: dict[str, Any], test: bool, tmp: str) -> tuple[dict, list]:
    sandbox, roots = os.path.join(tmp, "sandbox"), os.path.join(tmp, "roots")
    os.makedirs(sandbox)
    os.makedirs(roots)
    seed(sandbox, scenario.get("seed"))
    write_roots(roots, scenario, sandbox)
    grains = {"sandbox": sandbox, "id": "parity"}
    def list_files(saltenv: str) -> list[str]:
        return sorted(os.path.relpath(os.path.join(root, f), roots) for root, _d, files in os.walk(roots)
                      for f in files)

    ctx = StateContext(test=test, grains=grains, fetch_file=_fetch(roots), render_template=_render(grains, roots),
                       list_files=list_files, opts={"cachedir": tmp + "/cache", **_minion_opts(scenario, sandbox)})
    high = yaml.safe_load(scenario["sls"].replace("@SB@", sandbox))
    out = {}
    for state_id, mod, fun, name, kwargs in state_calls(high):
        func = lookup(mod, fun)
        if func is None:
            out[state_id] = {"result": False, "changes": [], "missing": True}
            continue
        try:
            ret = func(ctx, name, **kwargs)
        except Exception as exc:  # noqa: BLE001
            out[state_id] = {"result": False, "changes": [], "exception": repr(exc)}
            continue
        out[state_id] = digest(ret)
    return out, manifest(sandbox)


def normalize(data: Any, tmp: str) -> Any:
    text = json.dumps(data, sort_keys=True).replace(os.path.join(tmp, "sandbox"), "@SB@")
    results, files = json.loads(text)
    for ret in results.values():
        comment = ret.get("comment") or ""
        # where Salt gives no comment or a traceback, saltpan's own wording is not compared
        if not comment or comment.startswith("An exception occurred") or comment.startswith("The following files"):
            ret["comment"] = "<any>"
        elif comment.startswith("#### "):  # file.recurse: sections in Salt's (set) order; lines of "removed" too
            sections = sorted(("\n".join(sorted(s.split("\n"))) if s.startswith("removed ####") else s).strip()
                              for s in ("\n" + comment).split("\n#### ") if s.strip())
            ret["comment"] = sections
        changes = ret.get("changes")
        if isinstance(changes, dict) and isinstance(changes.get("removed"), list):
            changes["removed"] = sorted(changes["removed"])
    return results, files


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--salt-call", default="/opt/saltvenv/bin/salt-call")
    parser.add_argument("--scenarios", default=os.path.join(HERE, "parity_scenarios.yaml"))
    parser.add_argument("patterns", nargs="*")
    args = parser.parse_args()
    with open(args.scenarios) as handle:
        scenarios = yaml.safe_load(handle)
    failed = 0
    for scenario in scenarios:
        if args.patterns and not any(re.search(p, scenario["name"]) for p in args.patterns):
            continue
        for test in (False, True):
            label = f"{scenario['name']} {'test' if test else 'apply'}"
            with tempfile.TemporaryDirectory() as t1, tempfile.TemporaryDirectory() as t2:
                salt = normalize(run_salt(args.salt_call, scenario, test, t1), t1)
                ours = normalize(run_saltpan(scenario, test, t2), t2)
                for state_id, ret in ours[0].items():
                    if salt[0].get(state_id, {}).get("comment") == "<any>":
                        ret["comment"] = "<any>"
            if salt == ours:
                print(f"PASS {label}")
                continue
            failed += 1
            print(f"FAIL {label}")
            for part, (a, b) in zip(("results", "manifest"), zip(salt, ours, strict=True), strict=True):
                if a == b:
                    continue
                if part == "results":
                    for key in sorted(set(a) | set(b)):
                        if a.get(key) != b.get(key):
                            print(f"   {key}: salt={a.get(key)} saltpan={b.get(key)}")
                else:
                    sa = {json.dumps(i, sort_keys=True) for i in a}
                    sb = {json.dumps(i, sort_keys=True) for i in b}
                    for item in sorted(sa - sb):
                        print(f"   salt only:    {item}")
                    for item in sorted(sb - sa):
                        print(f"   saltpan only: {item}")
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
