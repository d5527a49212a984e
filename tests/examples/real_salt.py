"""Run real Salt masterless on the shipped trees, for minions of demo/fleet.yaml.

This is how tests/examples/expected/ was generated, and how the shipped state
tree is checked against real Salt (Salt 3008.3 in /opt/saltvenv here; pass
--salt-call or set SALTPAN_SALT_CALL elsewhere):

    # write tests/examples/expected/<id>.pillar.json from Salt's pillar.raw
    python tests/examples/real_salt.py pillar web01 db02 --write
    # write tests/examples/expected/<id>.lowstate.json from state.show_lowstate
    python tests/examples/real_salt.py lowstate web01 db02 --write

    # pillar.raw, state.show_lowstate, state.apply twice into a temp sandbox
    # (the second apply must change nothing), state.apply test=True
    python tests/examples/real_salt.py check web01 db02 lb01

    # state.apply with Salt, then twice with `saltpan call --local`, into the
    # same sandbox path: the files, modes and links left behind must agree
    python tests/examples/real_salt.py compare web01 db02 lb01

Each run gets a fresh temp directory: a minion config (id, the fleet grains,
pillar_roots / file_roots pointing at the shipped trees, the `frontends`
nodegroup, file_client: local and every runtime path under the temp dir) and,
for applies, a sandbox that replaces the fleet's `sandbox` grain.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED_DIR = os.path.join(REPO, "tests", "examples", "expected")
FLEET_FILE = os.path.join(REPO, "demo", "fleet.yaml")
DEFAULT_SALT_CALL = "/opt/saltvenv/bin/salt-call"
FUNCTIONS = {"pillar": "pillar.raw", "lowstate": "state.show_lowstate"}
NODEGROUPS = {"frontends": "G@role:web or G@role:lb"}  # as runtime/config.py: shipped()


def salt_call_path(explicit: str | None = None) -> str | None:
    """The salt-call to use, or None when there is none on this machine."""
    for candidate in (explicit, os.environ.get("SALTPAN_SALT_CALL"), DEFAULT_SALT_CALL):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def load_fleet() -> dict[str, dict[str, Any]]:
    with open(FLEET_FILE, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


class SaltMinion:
    """One masterless Salt minion in a temp directory, removed by close()."""

    def __init__(self, salt_call: str, minion_id: str, grains: Mapping[str, Any], sandbox: str | None = None):
        self.salt_call = salt_call
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix=f"saltpan-real-salt-{minion_id}-"))
        self.confdir = os.path.join(self.tmp, "conf")
        run = os.path.join(self.tmp, "run")
        os.makedirs(self.confdir)
        os.makedirs(run)
        grains = dict(grains)
        if sandbox is not None:
            grains["sandbox"] = sandbox
        self.sandbox = grains.get("sandbox")
        config = {
            "id": minion_id,
            "grains": grains,
            "pillar_roots": {"base": [os.path.join(REPO, "pillar_roots")]},
            "file_roots": {"base": [os.path.join(REPO, "state_roots")]},
            "nodegroups": NODEGROUPS,
            "file_client": "local",
            "root_dir": os.path.join(run, "root"),
            "pki_dir": os.path.join(run, "pki"),
            "cachedir": os.path.join(run, "cache"),
            "sock_dir": os.path.join(run, "sock"),
            "log_file": os.path.join(run, "minion.log"),
            "user": getpass.getuser(),
        }
        with open(os.path.join(self.confdir, "minion"), "w", encoding="utf-8") as fh:
            yaml.safe_dump(config, fh, default_flow_style=False)

    def call(self, *args: str, timeout: float = 180, saltpan: bool = False) -> tuple[int, Any, str]:
        """(exit status, the `local` part of the JSON output, stderr) of salt-call, or of saltpan call."""
        if saltpan:
            argv = [sys.executable, "-m", "runtime", "call", "-c", os.path.join(self.confdir, "minion"), "--local",
                    "--out", "json", *args]
        else:
            argv = [self.salt_call, "-c", self.confdir, "--local", "--out", "json", "-l", "quiet",
                    "--retcode-passthrough", *args]
        env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")
        env.pop("SALT_CONFIG_DIR", None)
        old_umask = os.umask(0o022)  # file modes in the sandbox depend on it
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO,
                                  stdin=subprocess.DEVNULL, check=False)
        finally:
            os.umask(old_umask)
        try:
            data = json.loads(proc.stdout)["local"] if proc.stdout.strip() else None
        except (ValueError, KeyError, TypeError):
            data = proc.stdout
        return proc.returncode, data, proc.stderr

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def real_outputs(salt_call: str, minion_id: str, grains: Mapping[str, Any], functions: list[str]) -> list[Any]:
    """Salt's output of each function (pillar.raw, state.show_lowstate, ...) with the fleet's grains."""
    minion = SaltMinion(salt_call, minion_id, grains)
    outputs = []
    try:
        for function in functions:
            rc, data, err = minion.call(function)
            if rc != 0 or not isinstance(data, (dict, list)):
                raise RuntimeError(f"salt-call {function} for {minion_id} failed (exit {rc}): {err or data}")
            outputs.append(data)
    finally:
        minion.close()
    return outputs


def real_output(salt_call: str, minion_id: str, grains: Mapping[str, Any], function: str) -> Any:
    return real_outputs(salt_call, minion_id, grains, [function])[0]


def changed_states(results: Any) -> list[str]:
    return sorted(key for key, ret in results.items() if ret.get("changes"))


def failed_states(results: Any) -> list[str]:
    return sorted(f"{key}: {ret.get('comment')}" for key, ret in results.items() if ret.get("result") is not True)


def check_minion(salt_call: str, minion_id: str, grains: Mapping[str, Any]) -> list[str]:
    """Problems found applying the shipped trees to minion_id with real Salt (empty: all good)."""
    problems: list[str] = []
    sandbox_root = tempfile.mkdtemp(prefix=f"saltpan-sandbox-{minion_id}-")
    minion = SaltMinion(salt_call, minion_id, grains, sandbox=os.path.join(sandbox_root, minion_id))
    try:
        rc, pillar, err = minion.call("pillar.raw")
        if rc != 0 or not isinstance(pillar, dict) or pillar.get("_errors"):
            problems.append(f"pillar.raw: exit {rc}, {err.strip() or pillar}")
        rc, low, err = minion.call("state.show_lowstate")
        if rc != 0 or not isinstance(low, list):
            problems.append(f"state.show_lowstate: exit {rc}, {err.strip() or low}")
            return problems
        print(f"{minion_id}: {len(low)} low chunks")
        rc, test_run, err = minion.call("state.apply", "test=True")
        if not isinstance(test_run, dict):
            problems.append(f"state.apply test=True: exit {rc}, {err.strip() or test_run}")
        elif os.path.exists(minion.sandbox):
            problems.append("state.apply test=True wrote into the sandbox")
        for run in (1, 2):
            rc, results, err = minion.call("state.apply")
            if rc != 0 or not isinstance(results, dict):
                problems.append(f"state.apply #{run}: exit {rc}, {err.strip() or results}")
                break
            failed = failed_states(results)
            changed = changed_states(results)
            print(f"{minion_id}: apply #{run}: {len(results)} states, {len(changed)} changed, {len(failed)} failed")
            problems += [f"apply #{run} failed {f}" for f in failed]
            if run == 2 and changed:
                problems += [f"apply #2 changed {c}" for c in changed]
    finally:
        minion.close()
        shutil.rmtree(sandbox_root, ignore_errors=True)
    return problems


def sandbox_manifest(root: str) -> dict[str, list[str]]:
    """{relative path: [kind, mode, content digest or link target]} of everything under root."""
    manifest: dict[str, list[str]] = {}
    for cur, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = os.path.join(cur, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                manifest[rel] = ["link", os.readlink(path)]
            elif stat.S_ISDIR(st.st_mode):
                manifest[rel] = ["dir", oct(st.st_mode & 0o7777)]
            else:
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                manifest[rel] = ["file", oct(st.st_mode & 0o7777), digest]
    return manifest


def compare_apply(salt_call: str, minion_id: str, grains: Mapping[str, Any]) -> list[str]:
    """Apply the shipped trees with Salt, then with saltpan (twice) into the same sandbox path; differences."""
    problems: list[str] = []
    sandbox_root = tempfile.mkdtemp(prefix=f"saltpan-compare-{minion_id}-")
    sandbox = os.path.join(sandbox_root, minion_id)
    minion = SaltMinion(salt_call, minion_id, grains, sandbox=sandbox)
    try:
        rc, results, err = minion.call("state.apply")
        if rc != 0 or not isinstance(results, dict):
            return [f"salt-call state.apply: exit {rc}, {err.strip() or results}"]
        salt_files = sandbox_manifest(sandbox)
        shutil.rmtree(sandbox)
        for run in (1, 2):
            rc, results, err = minion.call("state.apply", saltpan=True)
            if rc != 0 or not isinstance(results, dict):
                return problems + [f"saltpan state.apply #{run}: exit {rc}, {err.strip() or results}"]
            problems += [f"saltpan apply #{run} failed {f}" for f in failed_states(results)]
            if run == 2:
                problems += [f"saltpan apply #2 changed {c}" for c in changed_states(results)]
        saltpan_files = sandbox_manifest(sandbox)
        for path in sorted(set(salt_files) | set(saltpan_files)):
            if salt_files.get(path) != saltpan_files.get(path):
                problems.append(f"{path}: Salt {salt_files.get(path)}, saltpan {saltpan_files.get(path)}")
    finally:
        minion.close()
        shutil.rmtree(sandbox_root, ignore_errors=True)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["pillar", "lowstate", "check", "compare"])
    parser.add_argument("minions", nargs="*", help="minion ids from demo/fleet.yaml (default: all)")
    parser.add_argument("--salt-call", help=f"salt-call to run (default: $SALTPAN_SALT_CALL or {DEFAULT_SALT_CALL})")
    parser.add_argument("--write", action="store_true",
                        help="pillar, lowstate: write tests/examples/expected/<id>.<action>.json")
    args = parser.parse_args(argv)
    salt_call = salt_call_path(args.salt_call)
    if not salt_call:
        print("no salt-call found: pass --salt-call or set SALTPAN_SALT_CALL", file=sys.stderr)
        return 2
    fleet = load_fleet()
    minions = args.minions or sorted(fleet)
    unknown = [m for m in minions if m not in fleet]
    if unknown:
        print(f"not in {FLEET_FILE}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    status = 0
    for minion_id in minions:
        if args.action in FUNCTIONS:
            data = real_output(salt_call, minion_id, fleet[minion_id], FUNCTIONS[args.action])
            text = json.dumps(data, indent=2, sort_keys=True) + "\n"
            if args.write:
                path = os.path.join(EXPECTED_DIR, f"{minion_id}.{args.action}.json")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
                print(f"wrote {os.path.relpath(path, REPO)}")
            else:
                print(f"# {minion_id}\n{text}")
        else:
            check = check_minion if args.action == "check" else compare_apply
            problems = check(salt_call, minion_id, fleet[minion_id])
            for problem in problems:
                print(f"{minion_id}: PROBLEM {problem}")
            status = status or (1 if problems else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
