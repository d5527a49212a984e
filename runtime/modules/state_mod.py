"""state: apply, highstate, sls, single, show_top, show_highstate, show_lowstate, show_sls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.modules.registry import job

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


def _mods(mods: Any) -> list[str] | None:
    if mods is None or mods == "":
        return None
    if isinstance(mods, str):
        return [m.strip() for m in mods.split(",") if m.strip()]
    return [str(m) for m in mods]


@job
def apply(env: ModuleEnv, mods: Any = None, test: Any = None, saltenv: str | None = None, pillar: dict | None = None,
          **_: Any) -> Any:
    """Apply the highstate, or the sls given (comma-separated or a list). test=True predicts changes."""
    from runtime import state_run

    return state_run.highstate(env, _mods(mods), test, saltenv, pillar)


@job
def highstate(env: ModuleEnv, test: Any = None, saltenv: str | None = None, pillar: dict | None = None, **_: Any) -> Any:
    """Apply the highstate from the top file."""
    from runtime import state_run

    return state_run.highstate(env, None, test, saltenv, pillar)


@job
def sls(env: ModuleEnv, mods: Any, test: Any = None, saltenv: str | None = None, pillar: dict | None = None,
        **_: Any) -> Any:
    """Apply the given sls files."""
    from runtime import state_run

    return state_run.highstate(env, _mods(mods), test, saltenv, pillar)


@job
def single(env: ModuleEnv, fun: str, name: str, test: Any = None, **kwargs: Any) -> Any:
    """Run a single state function."""
    from runtime import state_run

    return state_run.single(env, fun, name, test, **kwargs)


@job
def show_top(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The sls each environment's top file gives this minion."""
    from runtime import state_run

    return state_run.show(env, "top", saltenv=saltenv)


@job
def show_highstate(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The high data (before extend/exclude)."""
    from runtime import state_run

    return state_run.show(env, "highstate", saltenv=saltenv)


@job
def show_lowstate(env: ModuleEnv, saltenv: str | None = None, **_: Any) -> Any:
    """The ordered low chunks."""
    from runtime import state_run

    return state_run.show(env, "lowstate", saltenv=saltenv)


@job
def show_sls(env: ModuleEnv, mods: Any, saltenv: str | None = None, **_: Any) -> Any:
    """The high data of the given sls."""
    from runtime import state_run

    return state_run.show(env, "highstate", _mods(mods), saltenv)
