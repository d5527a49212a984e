"""saltutil: refresh_pillar, refresh_grains, running, find_job, kill_job, and syncing custom modules
(sync_modules, sync_states, sync_all, refresh_modules: runtime/modules/custom.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.modules.registry import job, runs_command

if TYPE_CHECKING:
    from runtime.modules import ModuleEnv


@job
def refresh_pillar(env: ModuleEnv, wait: bool = True, timeout: float | None = None, clean_cache: bool = True) -> bool:
    """Replace the in-memory pillar with a freshly compiled one (fires pillar_refresh on the local bus).

    wait=True (saltpan's default; Salt's is False) returns once the new pillar is in memory, so the
    next command already targets and reads it.  clean_cache=True makes the master compile anew even
    when pillar_cache holds a copy younger than pillar_cache_ttl.
    """
    if env.refresh_pillar is not None:
        return bool(env.refresh_pillar(wait=_truthy(wait), timeout=timeout, clean_cache=_truthy(clean_cache)))
    if env.fresh_pillar is not None:
        data, _errors = env.fresh_pillar()
        env.pillar.clear()
        env.pillar.update(data)
    return True


_refresh_pillar = refresh_pillar  # refresh_grains' keyword argument shadows the name


@job
def refresh_grains(env: ModuleEnv, refresh_pillar: bool = True, clean_pillar_cache: bool = False) -> bool:
    """Re-read grains (and send them to the master on a minion), then refresh the pillar as well
    (it may depend on grains) unless refresh_pillar=False."""
    if env.refresh_grains is not None:
        env.refresh_grains()
    if _truthy(refresh_pillar):
        _refresh_pillar(env, wait=True, clean_cache=_truthy(clean_pillar_cache))
    return True


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


@job
def running(env: ModuleEnv) -> list[dict[str, Any]]:
    """Jobs running on this minion."""
    return env.jobs.running() if env.jobs is not None else []


@job
def find_job(env: ModuleEnv, jid: str) -> dict[str, Any]:
    """The running job with this jid, or {}."""
    return env.jobs.find(str(jid)) if env.jobs is not None else {}


@job
def kill_job(env: ModuleEnv, jid: str) -> str | None:
    """Stop the running job with this jid."""
    return env.jobs.kill(str(jid)) if env.jobs is not None else None


# Salt 3008's sync_all keys, in its order; saltpan loads custom modules and states (the others are
# listed, always empty: docs/functions.md)
SYNC_KINDS = ("tops", "clouds", "beacons", "modules", "states", "sdb", "grains", "renderers", "returners", "output",
              "utils", "log_handlers", "executors", "proxymodules", "engines", "thorium", "serializers", "matchers",
              "resources", "pillar", "wrapper")


@runs_command()
def sync_modules(env: ModuleEnv, saltenv: Any = None, refresh: bool = True, extmod_whitelist: Any = None,
                 extmod_blacklist: Any = None) -> list[str]:
    """Copy the custom execution modules of salt://_modules to this minion (its extension_modules
    directory); the 'modules.<name>' added or changed.  Later calls load them (runtime.modules.custom)."""
    from runtime.modules import custom

    return custom.sync(env, "modules", saltenv, extmod_whitelist, extmod_blacklist)


@runs_command()
def sync_states(env: ModuleEnv, saltenv: Any = None, refresh: bool = True, extmod_whitelist: Any = None,
                extmod_blacklist: Any = None) -> list[str]:
    """Copy the custom state modules of salt://_states to this minion; the 'states.<name>' added or
    changed."""
    from runtime.modules import custom

    return custom.sync(env, "states", saltenv, extmod_whitelist, extmod_blacklist)


@runs_command()
def sync_all(env: ModuleEnv, saltenv: Any = None, refresh: bool = True, extmod_whitelist: Any = None,
             extmod_blacklist: Any = None) -> dict[str, list[str]]:
    """Sync every kind of custom module: Salt's {kind: [changed]} (saltpan syncs and loads modules and
    states; the other kinds are always [])."""
    out: dict[str, list[str]] = {kind: [] for kind in SYNC_KINDS}
    out["modules"] = sync_modules(env, saltenv, refresh, extmod_whitelist, extmod_blacklist)
    out["states"] = sync_states(env, saltenv, refresh, extmod_whitelist, extmod_blacklist)
    return out


@runs_command()
def refresh_modules(env: ModuleEnv, **kwargs: Any) -> bool:
    """Load the custom modules again (the next lookup in this job reads the files anew)."""
    from runtime.modules import custom

    env.extra.pop(custom.CACHE_KEY, None)
    return True
