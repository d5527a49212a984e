"""The one compile path shared by offline compiles, masterless runs and minions.

Callers differ only in where files, grains and pillar come from: pass a
FileSource for the state tree (local roots, or a minion's remote file client).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.pillar import PillarCompiler, PillarResult
from compiler.roots import FileSource, LocalRoots

if TYPE_CHECKING:   # the state compiler is imported when used: a pillar compile does without it
    from compiler.errors import CompileError
    from compiler.highstate import Origin, StateCompiler
    from compiler.requisites import Lowstate
    from compiler.salt_functions import FunctionsFactory
    from runtime.modules import OfflineReport


def offline_functions(opts: Mapping[str, Any], report: OfflineReport | None = None,
                      read_host: bool = False) -> FunctionsFactory:
    """The execution functions templates may call in an offline compile (saltpan compile, the master's
    pillar): from the one registry (runtime/modules), nothing read from or run on this machine --
    except, with read_host (compiling a masterless minion on itself, see compiles_this_host), the
    functions that only read the host."""
    from runtime.modules import offline_functions as make

    return make(LocalRoots(opts.get("file_roots") or {}), LocalRoots(opts.get("pillar_roots") or {}), report,
                read_host)


def compiles_this_host(opts: Mapping[str, Any], minion_id: str) -> bool:
    """Whether a compile with these options is for the host it runs on: the config is a masterless
    minion's (``file_client: local``) and the minion compiled is that config's own ``id`` -- what
    ``salt-call --local state.show_lowstate`` is in Salt, which reads the host it runs on."""
    return opts.get("file_client") == "local" and bool(opts.get("id")) and opts.get("id") == minion_id


def pillar_compiler(opts: Mapping[str, Any], source: FileSource | None = None,
                    functions: FunctionsFactory | None = None) -> PillarCompiler:
    """functions: the template `salt` table (default: offline; a minion compiling its own pillar and
    `saltpan call --local` pass runtime.modules.live_functions)."""
    drivers = None  # no ext_pillar configured: no driver is ever looked up, so skip the loader's imports
    if opts.get("ext_pillar"):
        from runtime.ext_loader import DriverLoader

        drivers = DriverLoader(opts)
    return PillarCompiler(opts, source or LocalRoots(opts.get("pillar_roots") or {}), drivers,
                          functions=functions or offline_functions(opts))


def compile_pillar(opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any],
                   pillar_override: Mapping[str, Any] | None = None) -> PillarResult:
    return pillar_compiler(opts).compile(minion_id, grains, pillar_override)


def file_source(opts: Mapping[str, Any]) -> FileSource:
    """The state tree (salt://) as the master's file server has it: ``fileserver_backend`` in order.

    Without gitfs that is file_roots; with gitfs, the cached clones of ``gitfs_remotes`` (read,
    never fetched, here) and file_roots in the configured order.  Raises GitConfigError for a bad
    gitfs configuration.
    """
    from runtime.gitfs import uses_gitfs

    roots = LocalRoots(opts.get("file_roots") or {})
    if not uses_gitfs(opts):
        return roots
    from runtime.gitfs.remotes import GITFS, backends, gitfs_remotes
    from runtime.gitfs.repo import cache_root
    from runtime.gitfs.source import BackendChain, GitfsSource

    git = GitfsSource(gitfs_remotes(opts), cache_root(str(opts.get("cachedir") or ""), GITFS))
    return BackendChain([roots if name == "roots" else git for name in backends(opts)])


def state_compiler(opts: Mapping[str, Any], source: FileSource | None = None,
                   functions: FunctionsFactory | None = None) -> StateCompiler:
    """functions: the template `salt` table (default: offline, see pillar_compiler)."""
    from compiler.highstate import StateCompiler

    return StateCompiler(opts, source or file_source(opts), functions=functions or offline_functions(opts))


@dataclass
class StateResult:
    data: Any = None
    errors: list[CompileError] = field(default_factory=list)
    lowstate: Lowstate | None = None
    origins: Mapping[str, Origin] = field(default_factory=dict)   # where each state ID was declared


def check_states(result: StateResult) -> tuple[list[CompileError], list[CompileError]]:
    """(errors, warnings) of the compiled states' functions and arguments against the state modules
    saltpan has (runtime.states.signatures), each with the file:line of its state ID.  For the
    offline compile: a state run reports a missing function when it runs, as Salt does."""
    from compiler.errors import CompileError
    from runtime.states.signatures import check_chunk

    errors: list[CompileError] = []
    warnings: list[CompileError] = []
    if result.lowstate is None:
        return errors, warnings
    for chunk in result.lowstate.ordered_chunks():
        origin = result.origins.get(str(chunk.get("__id__")))
        for finding in check_chunk(chunk):
            problem = CompileError("unknown_state" if finding.error else "unknown_argument",
                                   f"ID '{chunk.get('__id__')}': {finding.message}",
                                   origin.file if origin else None, origin.line if origin else None)
            (errors if finding.error else warnings).append(problem)
    return errors, warnings


def compile_states(opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any],
                   what: str = "lowstate", compiler: StateCompiler | None = None, mods: list[str] | None = None,
                   saltenv: str | None = None, all_errors: bool = False, with_lowstate: bool = False) -> StateResult:
    """top / highstate / lowstate for one minion with its compiled pillar.

    all_errors (show_lowstate): when rendering had errors, also report what the extend and verify
    checks find in the partial high data, as Salt's show_lowstate does (state.apply stops at the
    render errors).  with_lowstate (highstate): the lowstate too, when it compiles (check_states).
    """
    from compiler.lowstate import compile_lowstate
    from runtime.states.registry import has_mod_watch

    compiler = compiler or state_compiler(opts)
    if what == "top":
        matches, errors = compiler.top(minion_id, grains, pillar, saltenv)
        return StateResult(matches, errors)
    high = compiler.highstate(minion_id, grains, pillar, saltenv, mods)
    if high.errors:
        errors = list(high.errors)
        if what == "lowstate" and all_errors:
            errors += compile_lowstate(high.high, high.origins, has_mod_watch, high_checks_only=True).errors
        return StateResult(None, errors)
    if what == "highstate" and not with_lowstate:
        return StateResult(high.high, [], origins=high.origins)
    low = compile_lowstate(high.high, high.origins, has_mod_watch)
    if what == "highstate":   # with its lowstate when it compiles, for check_states
        return StateResult(high.high, [], None if low.errors else low.lowstate, high.origins)
    if low.errors or low.lowstate is None:
        return StateResult(None, low.errors, origins=high.origins)
    return StateResult(low.lowstate.ordered_chunks(), [], low.lowstate, high.origins)
