"""The gitfs compatibility case: one master config and its git repositories, compiled by Salt and by saltpan.

The case is ``tests/gitfs/data``: ``config.yaml`` (gitfs remotes with a root and a
mountpoint, file_roots before gitfs, git_pillar with ``__env__`` and a root),
the repositories' branches (``gitrepos.REPOS``), ``minions.yaml`` (three minions'
grains) and ``expected/<variant>/<minion>.<check>.json``, what real Salt 3008.3
returned (``pillar.raw``, ``state.show_lowstate``).  A variant adds keys to the
config (``saltenv: dev``: the ``__env__`` pillar branch and the states follow it).

Regenerate the stored outputs with real Salt (salt-call from SALTPAN_SALT_CALL,
/opt/saltvenv or /work/saltvenv):

    .venv/bin/python -m tests.gitfs.salt_oracle --write

Salt 3008.3's pygit2 provider fails with pygit2 1.21 ("The local repository
configuration does not support adding files"), so the config selects Salt's
GitPython provider (``gitfs_provider`` / ``git_pillar_provider``); saltpan reads
those keys and always uses pygit2.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import yaml

from tests.gitfs.gitrepos import DATA, build_repos

EXPECTED = os.path.join(DATA, "expected")
VARIANTS: dict[str, dict[str, Any]] = {"base": {}, "saltenv_dev": {"saltenv": "dev"}}
CHECKS = {"pillar": "pillar.raw", "lowstate": "state.show_lowstate"}
SALT_CALLS = ("/opt/saltvenv/bin/salt-call", "/work/saltvenv/bin/salt-call")
PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def salt_call_path() -> str | None:
    for candidate in (os.environ.get("SALTPAN_SALT_CALL"), *SALT_CALLS):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def minions() -> dict[str, dict[str, Any]]:
    with open(os.path.join(DATA, "minions.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def master_config(repos_dir: str, variant: str) -> dict[str, Any]:
    with open(os.path.join(DATA, "config.yaml"), encoding="utf-8") as fh:
        text = fh.read().replace("@REPOS@", repos_dir).replace("@DATA@", DATA)
    config = yaml.safe_load(text)
    config.update(VARIANTS[variant])
    return config


class Case:
    """The repositories built once in a temp dir, and config files per variant."""

    def __init__(self, tmp: str):
        self.tmp = tmp
        self.repos_dir = os.path.join(tmp, "repos")
        self.urls = build_repos(self.repos_dir)

    def write_config(self, variant: str, extra: dict[str, Any], name: str) -> str:
        config = master_config(self.repos_dir, variant)
        config.update(extra)
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(config, fh)
        return path


def run_saltpan(case: Case, variant: str, check: str, minion: str, grains: dict[str, Any], fetch: bool) -> Any:
    """saltpan compile's JSON output for one minion (the config's cachedir is per variant)."""
    config = case.write_config(variant, {"cachedir": os.path.join(case.tmp, f"saltpan-cache-{variant}")},
                               f"saltpan-{variant}.yaml")
    grains_file = os.path.join(case.tmp, f"grains-{minion}.json")
    with open(grains_file, "w", encoding="utf-8") as fh:
        json.dump({"id": minion, **grains}, fh)
    argv = [sys.executable, "-m", "runtime", "compile", "--config", config, "--minion", minion, "--grains",
            grains_file, "--show", check, "--out", "json", *(["--fetch"] if fetch else [])]
    env = {**os.environ, "PYTHONPATH": PROJECT, "LC_ALL": "C.UTF-8"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=case.tmp)
    if proc.returncode != 0:
        raise AssertionError(f"saltpan compile {check} {minion} ({variant}) exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout)


def run_salt(salt_call: str, case: Case, variant: str, check: str, minion: str, grains: dict[str, Any]) -> Any:
    """What real Salt returns, masterless with the same config (and its own cache)."""
    run = os.path.join(case.tmp, f"salt-{variant}-{minion}")
    confdir = os.path.join(run, "conf")
    os.makedirs(confdir, exist_ok=True)
    config = master_config(case.repos_dir, variant)
    config.update({
        "id": minion, "grains": grains, "file_client": "local", "root_dir": run,
        "cachedir": os.path.join(run, "cache"), "pki_dir": os.path.join(run, "pki"),
        "sock_dir": os.path.join(run, "sock"), "log_file": os.path.join(run, "minion.log"),
        "user": getpass.getuser(),
    })
    with open(os.path.join(confdir, "minion"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(config, fh)
    proc = subprocess.run([salt_call, "--local", "-c", confdir, "--out", "json", CHECKS[check]],
                          capture_output=True, text=True, timeout=300, cwd=run)
    if proc.returncode != 0:
        raise AssertionError(f"salt-call {CHECKS[check]} {minion} ({variant}) exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)["local"]


def expected(variant: str, minion: str, check: str) -> Any:
    with open(os.path.join(EXPECTED, variant, f"{minion}.{check}.json"), encoding="utf-8") as fh:
        return json.load(fh)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="store real Salt's outputs as expected/")
    args = parser.parse_args()
    salt_call = salt_call_path()
    if salt_call is None:
        print("no salt-call found (set SALTPAN_SALT_CALL)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="saltpan-gitfs-oracle-") as tmp:
        case = Case(tmp)
        for variant in VARIANTS:
            for minion, grains in minions().items():
                for check in CHECKS:
                    data = run_salt(salt_call, case, variant, check, minion, grains)
                    print(f"{variant} {minion} {check}: {json.dumps(data)[:100]}")
                    if args.write:
                        os.makedirs(os.path.join(EXPECTED, variant), exist_ok=True)
                        with open(os.path.join(EXPECTED, variant, f"{minion}.{check}.json"), "w",
                                  encoding="utf-8") as fh:
                            json.dump(data, fh, indent=2, sort_keys=True)
                            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
