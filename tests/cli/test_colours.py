"""Colours on a terminal, and the three ways to turn them off or on: NO_COLOR (no-color.org),
--no-color, --force-color (also before the command).  Each command runs on a real pty."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ESC = "\x1b["


def on_a_tty(argv: list[str], **env: str) -> tuple[int, str]:
    """Run `python -m runtime ARGV` with stdout and stderr on a pty; (exit status, what it printed)."""
    master, slave = pty.openpty()
    child_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    child_env.update(PYTHONPATH=str(REPO), TERM="xterm", **env)
    proc = subprocess.Popen([sys.executable, "-m", "runtime", *argv], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, cwd=REPO, env=child_env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for 60 s from {argv}")
        try:
            data = os.read(master, 65536)
        except OSError:   # EIO: the child closed the pty
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(30), b"".join(chunks).decode("utf-8", "replace")


CALL = ["call", "--local", "grains.item", "id"]           # the nested outputter
COMPILE = ["compile", "--minion", "web01"]               # nested, through the compile path


@pytest.mark.parametrize("argv", [CALL, COMPILE], ids=["call", "compile"])
def test_a_terminal_gets_colours(argv: list[str]) -> None:
    code, text = on_a_tty(argv)
    assert code == 0, text
    assert ESC in text


@pytest.mark.parametrize("argv", [CALL, COMPILE], ids=["call", "compile"])
def test_no_color_environment_variable(argv: list[str]) -> None:
    code, text = on_a_tty(argv, NO_COLOR="1")
    assert code == 0, text
    assert ESC not in text
    assert "----------" in text


@pytest.mark.parametrize("argv", [[*CALL, "--no-color"], ["--no-color", *CALL], [*COMPILE, "--no-colour"]],
                         ids=["after", "before", "compile"])
def test_no_color_option(argv: list[str]) -> None:
    code, text = on_a_tty(argv)
    assert code == 0, text
    assert ESC not in text


def test_force_color_wins_over_no_color_and_a_pipe() -> None:
    code, text = on_a_tty([*CALL, "--force-color"], NO_COLOR="1")
    assert code == 0 and ESC in text
    piped = subprocess.run([sys.executable, "-m", "runtime", *CALL, "--force-color"], capture_output=True, text=True,
                           cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60, check=False)
    assert piped.returncode == 0 and ESC in piped.stdout


def test_a_highstate_on_a_terminal(tmp_path: Path) -> None:
    """The highstate outputter (state runs) follows the same rules."""
    (tmp_path / "states").mkdir()
    (tmp_path / "states" / "top.sls").write_text("base:\n  '*':\n    - ok\n")
    (tmp_path / "states" / "ok.sls").write_text("fine:\n  test.succeed_without_changes: []\n")
    (tmp_path / "minion").write_text(f"file_client: local\nid: t1\nfile_roots: {{base: [{tmp_path}/states]}}\n"
                                     f"pillar_roots: {{base: [{tmp_path}/states]}}\nroot_dir: {tmp_path}\n")
    argv = ["call", "-c", str(tmp_path / "minion"), "state.apply"]
    code, coloured = on_a_tty(argv)
    assert code == 0 and ESC in coloured and "Succeeded: 1" in coloured
    for plain in (on_a_tty(argv, NO_COLOR="1"), on_a_tty([*argv, "--no-color"])):
        assert plain[0] == 0 and ESC not in plain[1] and "Succeeded: 1" in plain[1]
