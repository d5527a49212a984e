"""`saltpan completion bash|zsh`: scripts generated from the parser; the bash one, sourced in a
real bash, completes commands, options and option values."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def saltpan(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime", *argv], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120, check=False)


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc = saltpan("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path_factory.mktemp("completion") / "saltpan.bash"
    path.write_text(proc.stdout)
    return path


def complete(script: Path, line: str) -> list[str]:
    """What bash offers for the last word of `line` (COMPREPLY of the registered function)."""
    words = line.split(" ")
    program = (
        f"source {script}\n"
        "fn=$(complete -p saltpan | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n"
        f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        f"\"$fn\" saltpan {words[-1]!r} {words[-2]!r}\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands(bash_script: Path) -> None:
    assert set(complete(bash_script, "saltpan co")) == {"compile", "completion"}
    assert {"compile", "call", "run", "key", "jobs", "event", "minions", "master", "minion"} <= set(
        complete(bash_script, "saltpan "))


def test_bash_completes_show_values(bash_script: Path) -> None:
    assert complete(bash_script, "saltpan compile --show ") == ["pillar", "top", "highstate", "lowstate"]
    assert complete(bash_script, "saltpan compile --show low") == ["lowstate"]


def test_bash_completes_options_and_their_values(bash_script: Path) -> None:
    assert "--state-output" in complete(bash_script, "saltpan run --state")
    assert set(complete(bash_script, "saltpan run --state-output t")) == {"terse", "terse_id"}
    assert sorted(complete(bash_script, "saltpan call --ou")) == ["--out", "--out-file", "--out-file-append", "--output",
                                                          "--output-file", "--output-file-append"]


def test_zsh_script() -> None:
    proc = saltpan("completion", "zsh")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("#compdef saltpan")
    for word in ("compile", "lowstate", "--state-output", "--batch"):
        assert word in proc.stdout
    if shutil.which("zsh"):
        checked = subprocess.run(["zsh", "-n"], input=proc.stdout, capture_output=True, text=True, timeout=60,
                                 check=False)
        assert checked.returncode == 0, checked.stderr


def test_completion_is_imported_only_by_its_command() -> None:
    """shtab is not loaded by other commands: their start-up does not pay for it."""
    probe = ("import sys; from runtime.cli import main; main.build_parser(); "
             "print('shtab' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), check=False)
    assert done.stdout.strip() == "False", done.stderr
