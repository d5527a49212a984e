"""state: apply, highstate, sls, single, show_top, show_highstate, show_lowstate, show_sls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime import state_run

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv

__all__ = ["apply", "highstate", "sls", "single", "show_top", "show_highstate", "show_lowstate", "show_sls"]


def _mods(mods: Any) -> list[str] | None:
    if mods is None or mods == "":
        return None
    if isinstance(mods, str):
        return [m.strip() for m in mods.split(",") if m.strip()]
    return [str(m) for m in mods]


def apply(env: ModuleEnv, mods: Any = None, test: Any = None, saltenv: str | None = None, pillar: dict | None = None,
          **_: Any) -> Any:
    """Apply the highstate, or the sls given (comma-separated or a list). test=True predicts changes."""
    return state_run.highstate(env, _mods(mods), test, saltenv, pillar)


def highstate(env: ModuleEnv, test: Any = None, saltenv: str | None = None, pillar: dict | None = None, **_: Any) -> Any:
    """Apply the highstate from the top file."""
    return state_run.highstate(env, None, test, saltenv, pillar)


def sls(env: ModuleEnv, mods: Any, test: Any = None, saltenv: str | None = None, pillar: dict | None = None,
        **_: Any) -> Any:
    """Apply the given sls files."""
    return state_run.highstate(env, _mods(mods), test, saltenv, pillar)


def single(env: ModuleEnv, fun: str, name: str, test: Any = None, **kwargs: Any) -> Any:
    """Run a single state function."""
    return state_run.single(env, fun, name, test, **kwargs)


def show_top(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The sls each environment's top file gives this minion."""
    return state_run.show(env, "top", saltenv=saltenv)


def show_highstate(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The high data (before extend/exclude)."""
    return state_run.show(env, "highstate", saltenv=saltenv)


def show_lowstate(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The ordered low chunks."""
    return state_run.show(env, "lowstate", saltenv=saltenv)


def show_sls(env: ModuleEnv, mods: Any, saltenv: str | None = None, **_: Any) -> Any:
    """The high data of the given sls."""
    return state_run.show(env, "highstate", _mods(mods), saltenv)
