"""git: questions about a git checkout on this host (current_branch, revision)."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Any, NoReturn

from runtime.modules.registry import runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _error(message: str) -> Exception:
    from runtime.modules import CommandError

    return CommandError(message)


def _git(cwd: str, *args: str, user: str | None = None) -> str:
    import os

    if not os.path.isdir(cwd):
        raise _error(f"Path '{cwd}' is not a directory")
    try:
        res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise _error(f"git: {exc.strerror}") from None
    if res.returncode != 0:
        raise _error(f"Command 'git {' '.join(args)}' failed: {res.stderr.strip()}")
    return res.stdout.strip()


def _no_checkout(env: ModuleEnv, cwd: str, *args: Any, **kwargs: Any) -> NoReturn:
    """raises Salt's error "Path '<cwd>' is not a directory"."""
    raise _error(f"Path '{cwd}' is not a directory")


@runs_command(absent=_no_checkout)
def current_branch(env: ModuleEnv, cwd: str, user: str | None = None, password: str | None = None,
                   ignore_retcode: bool = False, output_encoding: str | None = None) -> str:
    """The branch checked out in cwd."""
    return _git(cwd, "rev-parse", "--abbrev-ref", "HEAD")


@runs_command(absent=_no_checkout)
def revision(env: ModuleEnv, cwd: str, rev: str = "HEAD", short: bool = False, user: str | None = None,
             password: str | None = None, ignore_retcode: bool = False, output_encoding: str | None = None) -> str:
    """The commit id of rev in cwd."""
    return _git(cwd, "rev-parse", *(["--short"] if short else []), rev)
