"""saltutil: refresh_pillar, refresh_grains, running, find_job, kill_job."""

from __future__ import annotations

from typing import Any

__all__ = ["refresh_pillar", "refresh_grains", "running", "find_job", "kill_job", "sync_all"]


def refresh_pillar(env: Any, wait: bool = True, **_: Any) -> bool:
    """Replace the in-memory pillar with a freshly compiled one (fires pillar_refresh)."""
    if env.fire_event is not None:
        env.fire_event("pillar_refresh", {})
    if env.refresh_pillar is not None:
        env.refresh_pillar()
        return True
    if env.fresh_pillar is not None:
        data, _errors = env.fresh_pillar()
        env.pillar.clear()
        env.pillar.update(data)
    return True


def refresh_grains(env: Any, **_: Any) -> bool:
    """Re-read grains (and send them to the master on a minion)."""
    if env.refresh_grains is not None:
        env.refresh_grains()
    return True


def running(env: Any) -> list[dict[str, Any]]:
    """Jobs running on this minion."""
    return env.jobs.running() if env.jobs is not None else []


def find_job(env: Any, jid: str) -> dict[str, Any]:
    """The running job with this jid, or {}."""
    return env.jobs.find(str(jid)) if env.jobs is not None else {}


def kill_job(env: Any, jid: str) -> str | None:
    """Stop the running job with this jid."""
    return env.jobs.kill(str(jid)) if env.jobs is not None else None


def sync_all(env: Any, *args: Any, **kwargs: Any) -> dict[str, list]:
    """Nothing to sync in saltpan (custom modules are read from extension_modules directly)."""
    return {}
