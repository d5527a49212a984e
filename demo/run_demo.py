"""`make demo`: saltpan on the shipped trees (pillar_roots/, state_roots/, demo/fleet.yaml).

Each stage is a function that runs real `saltpan` commands, prints what it
runs and what they print, and returns True when every command succeeded.
STAGES lists them in order; the demo stops at the first stage that fails and
exits non-zero.  Commands run with a timeout, so nothing is left running.

Stages so far:
  1. compile the pillar of a web and a database minion, offline

To add a stage (masterless apply into a sandbox, a master with three
minions, ...), write a function `stage_<name>(demo: Demo) -> bool` and append
it to STAGES.  A stage that starts daemons must stop them in a `finally:`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND_TIMEOUT = 120.0


class Demo:
    """Runs saltpan commands for the stages and prints them as a user would type them."""

    def __init__(self, saltpan: Sequence[str]):
        self.saltpan = list(saltpan)

    def heading(self, title: str) -> None:
        print(f"\n{'=' * 78}\n{title}\n{'=' * 78}", flush=True)

    def saltpan_cmd(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> bool:
        """Run `saltpan ARGS`, its output going straight to ours; True when it exits 0."""
        print(f"\n$ saltpan {shlex.join(args)}", flush=True)
        try:
            proc = subprocess.run([*self.saltpan, *args], cwd=REPO, timeout=timeout, stdin=subprocess.DEVNULL,
                                  check=False)
        except subprocess.TimeoutExpired:
            print(f"demo: `saltpan {shlex.join(args)}` did not finish within {timeout:.0f} s", file=sys.stderr)
            return False
        except OSError as exc:
            print(f"demo: cannot run saltpan ({self.saltpan[0]}): {exc.strerror}", file=sys.stderr)
            return False
        if proc.returncode != 0:
            print(f"demo: `saltpan {shlex.join(args)}` exited with status {proc.returncode}", file=sys.stderr)
            return False
        return True


def stage_compile_pillar(demo: Demo) -> bool:
    """Pillar for two minions of demo/fleet.yaml, compiled offline from pillar_roots/."""
    ok = True
    for minion_id, what in (("web01", "a web server (glob web*, nodegroup frontends)"),
                            ("db01", "a database server (grain role:db; its secrets come from an include)")):
        demo.heading(f"Pillar of {minion_id}, {what}")
        ok = demo.saltpan_cmd("compile", "--minion", minion_id, "--show", "pillar") and ok
    return ok


STAGES: list[Callable[[Demo], bool]] = [
    stage_compile_pillar,
]


def find_saltpan() -> list[str]:
    """The saltpan console script beside this Python (the venv's), else `python -m runtime`."""
    script = os.path.join(os.path.dirname(sys.executable), "saltpan")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "runtime"]


def main() -> int:
    demo = Demo(find_saltpan())
    print("saltpan demo: the shipped trees in pillar_roots/ and state_roots/, the minions of demo/fleet.yaml")
    for stage in STAGES:
        if not stage(demo):
            print(f"\ndemo: FAILED in {stage.__name__}", file=sys.stderr)
            return 1
    print(f"\ndemo: all {len(STAGES)} stage(s) succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
