"""Compile and apply states for this host: state.apply / highstate / sls / single.

Used by the execution module ``state`` (masterless and on minions): pillar is
compiled fresh for every run (as Salt does), the state tree comes from the
environment's FileSource (local roots or the master's file server).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from compiler.errors import CompileError
from compiler.render import Renderer
from compiler.requisites import Lowstate, Run, order_chunks
from compiler.roots import FileSource, valid_saltenv
from runtime import pipeline
from runtime.config import option
from runtime.executor import Executor
from runtime.state_returns import PILLAR_FAILED, dry_run_flag
from runtime.states import StateContext, has_mod_watch

if TYPE_CHECKING:
    from compiler.highstate import Origin
    from runtime.modules import ModuleEnv


def _parse_salt_url(url: str, default_env: str) -> tuple[str, str]:
    path = url[len("salt://"):] if url.startswith("salt://") else url
    saltenv = default_env
    if "?" in path:
        path, query = path.split("?", 1)
        for part in query.split("&"):
            if part.startswith("saltenv="):
                saltenv = part.split("=", 1)[1]
    return path, saltenv


class StateRunner:
    """Everything one state run needs, built from a ModuleEnv."""

    def __init__(self, env: ModuleEnv, pillar: dict[str, Any]):
        self.env = env
        self.opts = env.opts
        self.pillar = pillar
        # the roots states and salt:// sources are read from (without a state_source: the file server's
        # backends, file_roots and gitfs, as the state compiler reads them)
        self.source: FileSource = env.state_source or pipeline.file_source(self.opts)
        from dataclasses import replace

        from compiler.salt_functions import SaltFunctions
        from runtime import modules

        # templates and states of this run see the freshly compiled pillar; functions run for real
        run_env = replace(env, pillar=pillar)
        self.compiler = pipeline.state_compiler(self.opts, self.source, modules.live_functions(run_env))
        self.renderer: Renderer = self.compiler.renderer
        self.functions = modules.function_table(run_env)
        self.template_functions = SaltFunctions(modules.live_functions(run_env)(
            self.opts.get("id") or "", env.grains, pillar, self.opts))

    def fetch_file(self, url: str, saltenv: str) -> tuple[bytes, str, int | None] | None:
        path, env_name = _parse_salt_url(url, saltenv)
        if not valid_saltenv(env_name):
            from runtime.states._source import SourceError

            raise SourceError(f"Source file {url} refused: invalid saltenv {env_name[:64]!r}")
        try:
            found = self.source.fetch(env_name, path)
        except CompileError as exc:  # outside the roots, refused or unreachable file server
            from runtime.states._source import SourceError

            raise SourceError(f"Source file {url} refused: {exc.message}") from None
        if found is None:
            return None
        return found.data, found.display, found.mode

    def list_files(self, saltenv: str) -> list[str]:
        if not valid_saltenv(saltenv):
            from runtime.states._source import SourceError

            raise SourceError(f"Invalid saltenv {saltenv[:64]!r}")
        try:
            return list(self.source.list_files(saltenv))
        except CompileError as exc:  # refused or unreachable file server
            from runtime.states._source import SourceError

            raise SourceError(f"Cannot list the files of saltenv {saltenv!r}: {exc.message}") from None

    def render_template(self, text: str, engine: str, context: Mapping[str, Any], display: str) -> str:
        path, env_name = _parse_salt_url(display, "base") if display.startswith("salt://") else (display, "base")
        ctx = {"grains": self.env.grains, "pillar": self.pillar, "opts": self.opts, "salt": self.template_functions,
               "saltenv": env_name, "id": self.opts.get("id")}
        ctx.update(context)
        rel = path.lstrip("/") or "template"
        return self.renderer.render_text(text, env_name, rel, display, ctx, engine)

    def context(self, low: dict, test: bool) -> StateContext:
        return StateContext(test=test, opts=self.opts, grains=self.env.grains, pillar=self.pillar,
                            saltenv=str(low.get("__env__") or "base"), sls=low.get("__sls__"),
                            fetch_file=self.fetch_file, list_files=self.list_files,
                            fire_event=getattr(self.env, "fire_event", None),
                            render_template=self.render_template,
                            functions=self.functions)

    def execute(self, lowstate: Lowstate, test: bool, origins: Mapping[str, Origin] | None = None) -> dict[str, dict]:
        """Apply lowstate; ``origins`` (where each state ID was declared) put file:line into the
        message of a state that cannot run."""
        failhard = option(self.opts, "failhard", bool)
        from runtime import modules

        def custom_state(state: str, fun: str) -> Callable[..., dict] | None:
            return modules.custom_state(self.env, state, fun)

        executor = Executor(lowstate, self.context, self.env.grains, self.functions, test=test, failhard=failhard,
                            custom_states=custom_state,
                            explain_missing=lambda low: _explain_missing(low, origins or {}))
        return executor.apply()


def _explain_missing(low: Mapping[str, Any], origins: Mapping[str, Origin]) -> str:
    """A line after Salt's "State 'x.y' was not found ... Reason: ...": where the state ID is
    declared, and the state function closest to the missing one."""
    from runtime.states.signatures import suggest

    origin = origins.get(str(low.get("__id__")))
    where = (f"{origin.file}:{origin.line}" if origin.line else origin.file) if origin else None
    name = f"{low.get('state')}.{low.get('fun')}"
    hint = suggest(str(low.get("state")), str(low.get("fun")))
    parts = [f"ID '{low.get('__id__')}' is declared at {where}" if where else "",
             f"did you mean '{hint}'?" if hint and hint != name else ""]
    text = "; ".join(p for p in parts if p)
    return f"{text}\n" if text else ""


def pillar_messages(pillar: Mapping[str, Any], errors: list[Any]) -> list[str]:
    """Why the pillar failed: the compile's own errors (file:line, the cause) when it was compiled
    here (masterless, a minion compiling its own); else the master's ``_errors`` (Salt's words:
    the details are in the master's log)."""
    return [str(e) for e in errors] or [str(m) for m in pillar.get("_errors") or []]


def pillar_errors_result(errors: list[str]) -> list[str]:
    return [PILLAR_FAILED, *[str(e) for e in errors]]


def fresh_pillar(env: ModuleEnv, override: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list]:
    if env.fresh_pillar is None:
        return dict(env.pillar), []
    data, errors = env.fresh_pillar()
    if override:
        from compiler import merge

        data = merge.merge(data, override)
    return data, errors


def _test_mode(env: ModuleEnv, test: Any) -> bool:
    """``test=`` of a state run (the config's ``test`` without one); a value that is not a boolean
    is refused before anything runs."""
    if test is None:
        return option(env.opts, "test", bool)
    try:
        return dry_run_flag(test)
    except ValueError as exc:
        from runtime.modules import CommandError

        raise CommandError(str(exc)) from None


def highstate(env: ModuleEnv, mods: list[str] | None = None, test: Any = None, saltenv: str | None = None,
              pillar: Mapping[str, Any] | None = None) -> dict[str, dict] | list[str]:
    """Compile (fresh pillar) and apply the highstate, or the given sls."""
    dry_run = _test_mode(env, test)
    pillar_data, errors = fresh_pillar(env, pillar)
    if errors or pillar_data.get("_errors"):
        return pillar_errors_result(pillar_messages(pillar_data, errors))
    runner = StateRunner(env, pillar_data)
    result = pipeline.compile_states(env.opts, env.opts.get("id") or "", env.grains, pillar_data, "lowstate",
                                     compiler=runner.compiler, mods=mods, saltenv=saltenv)
    if result.errors:
        return [e.salt_message() for e in result.errors]
    assert result.lowstate is not None
    if mods is None and not result.lowstate.chunks:
        return _nothing_to_apply(runner, env, pillar_data, saltenv)
    return runner.execute(result.lowstate, dry_run, result.origins)


def _nothing_to_apply(runner: StateRunner, env: ModuleEnv, pillar: Mapping[str, Any],
                      saltenv: str | None) -> dict[str, dict]:
    """A highstate without states is a failure, as in Salt: no top file entry matches this minion
    (a misspelt id or grain in top.sls, another saltenv), or the sls matched declare nothing."""
    matches, _ = runner.compiler.top(env.opts.get("id") or "", env.grains, pillar, saltenv)
    comment = "No states found for this minion" if any(matches.values()) else \
        "No Top file or master_tops data matches found. Please see master log for details."
    return {"no_|-states_|-states_|-None": {"result": False, "comment": comment, "name": "No States",
                                            "changes": {}, "__run_num__": 0}}


def show(env: ModuleEnv, what: str, mods: list[str] | None = None, saltenv: str | None = None) -> Any:
    pillar_data, errors = fresh_pillar(env)
    if errors or pillar_data.get("_errors"):
        raise CompileError("pillar_failed", "Pillar failed to render: " + "; ".join(pillar_messages(pillar_data,
                                                                                                     errors)))
    runner = StateRunner(env, pillar_data)
    result = pipeline.compile_states(env.opts, env.opts.get("id") or "", env.grains, pillar_data, what,
                                     compiler=runner.compiler, mods=mods, saltenv=saltenv, all_errors=True)
    if result.errors:
        return [e.salt_message() for e in result.errors]
    return result.data


def single(env: ModuleEnv, fun: str, name: str, test: Any = None, **kwargs: Any) -> dict[str, dict] | list[str]:
    """Run one state function: state.single file.managed name=/tmp/x contents=hi."""
    if fun.count(".") != 1:
        return [f"Invalid function passed: {fun!r} (use module.function)"]
    state, func = fun.split(".")
    dry_run = _test_mode(env, test)
    pillar_data, errors = fresh_pillar(env)
    if errors or pillar_data.get("_errors"):
        return pillar_errors_result(pillar_messages(pillar_data, errors))
    chunk = {"state": state, "fun": func, "name": name, "__id__": name, "__sls__": None,
             "__env__": kwargs.pop("saltenv", None) or "base", **{k: v for k, v in kwargs.items()
                                                                   if not k.startswith("__")}}
    lowstate, problems = order_chunks([chunk], has_mod_watch)
    if problems or lowstate is None:
        return [str(getattr(p, "message", p)) for p in problems]
    lowstate.runs = [Run(0)]
    runner = StateRunner(env, pillar_data)
    return runner.execute(lowstate, dry_run)
