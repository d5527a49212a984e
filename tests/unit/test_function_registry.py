"""The one registry of execution functions and the templates' salt table derived from it:
declarations, the offline rule (never read the host or run a command while compiling), --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler.salt_functions import SaltFunctions
from runtime import modules
from runtime.modules import ModuleEnv, OfflineReport, live_functions, offline_functions
from runtime.modules.registry import Access
from tests.unit.helpers import write_tree

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_function_declares_its_access() -> None:
    registry = modules.registry()
    assert len(registry) > 100
    for name, fn in registry.items():
        assert isinstance(fn.access, Access), name
        assert fn.doc, f"{name} has no docstring (sys.doc shows it)"
        if fn.access is Access.HOST:
            assert fn.absent is not None, f"{name} reads the host but has no offline answer"
    # the functions the formulas call while rendering (USAGE.md of ../shared/realworld)
    for name in ("log.debug", "slsutil.serialize", "grains.filter_by", "pillar.get", "config.get", "grains.get",
                 "cmd.run", "file.dirname", "defaults.merge", "file.file_exists", "log.warning", "slsutil.merge",
                 "cp.list_states", "file.directory_exists", "mine.get", "user.info", "alternatives.show_current",
                 "cmd.has_exec", "cmd.run_all", "cmd.shell", "cmd.which", "config.option", "cp.list_master_dirs",
                 "file.contains_regex", "file.get_user", "file.join", "file.readdir", "git.current_branch",
                 "log.error", "pkg.version", "pkg.version_cmp", "status.time", "network.calc_net",
                 "network.ip_in_subnet", "dnsutil.serial"):
        assert name in registry, name


def test_sys_list_functions_is_the_registry() -> None:
    env = ModuleEnv(opts={}, grains={}, pillar={})
    assert modules.call(env, "sys.list_functions") == sorted(modules.registry())
    assert "status.time" in modules.call(env, "sys.list_functions", ["status.*"])


def _table(tmp_path: Path, offline: bool, report: OfflineReport | None = None) -> SaltFunctions:
    env = ModuleEnv(opts={"id": "m1"}, grains={"id": "m1", "os_family": "Debian"}, pillar={})
    factory = offline_functions(report=report) if offline else live_functions(env)
    return SaltFunctions(factory("m1", env.grains, env.pillar, env.opts))


def test_offline_host_reads_answer_as_for_an_absent_thing_even_when_it_exists(tmp_path: Path) -> None:
    here = tmp_path / "present.txt"
    here.write_text("x\n")
    live = _table(tmp_path, offline=False)
    offline = _table(tmp_path, offline=True)
    assert live["file.file_exists"](str(here)) is True
    assert offline["file.file_exists"](str(here)) is False
    assert live["file.directory_exists"](str(tmp_path)) is True
    assert offline["file.directory_exists"](str(tmp_path)) is False
    assert live["cmd.which"]("sh") is not None
    assert offline["cmd.which"]("sh") is None
    assert offline["user.info"]("root") == {}
    assert live["user.info"]("root")["uid"] == 0
    assert offline["pkg.version"]("bash") == ""
    with pytest.raises(modules.CommandError, match="A valid directory was not specified"):
        offline["file.readdir"](str(tmp_path))


def test_offline_never_runs_a_command(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    offline = _table(tmp_path, offline=True)
    assert offline["cmd.run"](f"touch {marker}") == ""
    assert offline["cmd.shell"](f"touch {marker}") == ""
    assert offline["cmd.run_all"](f"touch {marker}") == {"pid": 0, "retcode": 127, "stdout": "", "stderr": ""}
    assert offline["cmd.retcode"](f"touch {marker}") == 127
    assert not marker.exists()
    live = _table(tmp_path, offline=False)
    live["cmd.run"](f"touch {marker}")
    assert marker.exists()


def test_offline_answers_keep_salt_signatures() -> None:
    offline = _table(Path("."), offline=True)
    with pytest.raises(modules.CommandError, match="Passed invalid arguments to file.file_exists"):
        offline["file.file_exists"]()


def test_jobs_and_unknown_functions_are_not_in_templates() -> None:
    table = _table(Path("."), offline=False)
    assert "state.apply" not in table and "saltutil.refresh_pillar" not in table
    assert "nosuch.fn" not in table
    with pytest.raises(KeyError):
        table["state.apply"]
    assert "drives this minion's jobs" in table.missing_reason("state.apply")
    assert "no execution module 'nosuch'" in table.missing_reason("nosuch.fn")
    assert "has no function 'grains.nope'" in table.missing_reason("grains.nope")


def test_templates_call_cmd_run_as_cmd_shell() -> None:
    table = _table(Path("."), offline=False)
    assert table["cmd.run"]("echo a | tr a b") == "b"


def test_offline_report_names_file_and_line(tmp_path: Path) -> None:
    from runtime import pipeline

    write_tree(tmp_path / "pillar", {"top.sls": "base:\n  '*':\n    - x\n",
                                     "x.sls": "a: 1\nb: {{ salt['file.file_exists']('/etc/hostname') }}\n"
                                              "c: {{ salt['grains.get']('os') }}\n"})
    opts = {"pillar_roots": {"base": [str(tmp_path / "pillar")]}, "file_roots": {}}
    report = OfflineReport()
    result = pipeline.pillar_compiler(opts, functions=pipeline.offline_functions(opts, report)).compile(
        "m1", {"id": "m1", "os": "Debian"})
    assert result.errors == [] and result.pillar["b"] is False
    (call,) = report.calls
    assert (call.function, call.file, call.line, call.returned) == (
        "file.file_exists", str(tmp_path / "pillar" / "x.sls"), 2, False)


def test_compile_strict_warns_with_file_and_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "states/top.sls": "base:\n  '*':\n    - tz\n",
        "states/tz.sls": "{% if not salt['file.file_exists']('/etc/localtime') %}\nlink:\n  test.nop: []\n"
                         "{% endif %}\nwho:\n  test.nop:\n    - name: {{ salt['user.info']('root').get('home', "
                         "'none') }}\n",
        "pillar/top.sls": "{}\n",
        "c.yaml": "file_roots: {base: [states]}\npillar_roots: {base: [pillar]}\n",
    })
    argv = [sys.executable, "-m", "runtime", "compile", "-c", str(tmp_path / "c.yaml"), "-m", "m1",
            "--show", "highstate", "--out", "json"]
    plain = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert plain.returncode == 0, plain.stderr
    assert "reads the minion's host" not in plain.stderr
    strict = subprocess.run([*argv, "--strict"], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert strict.returncode == 0, strict.stderr
    tz = str(tmp_path / "states" / "tz.sls")
    assert f"warning: {tz}:1: salt['file.file_exists'] reads the minion's host" in strict.stderr
    assert f"warning: {tz}:7: salt['user.info'] reads the minion's host" in strict.stderr
    assert "returned {}" in strict.stderr
    assert '"link"' in strict.stdout and '"none"' in strict.stdout


def test_compiling_this_host_reads_it_but_never_runs_a_command(tmp_path: Path) -> None:
    """A masterless minion's own config compiles this host (salt-call --local state.show_lowstate):
    host reads read it; commands still never run."""
    here = tmp_path / "present.txt"
    here.write_text("x\n")
    marker = tmp_path / "ran"
    env = ModuleEnv(opts={"id": "m1"}, grains={"id": "m1"}, pillar={})
    table = SaltFunctions(offline_functions(read_host=True)("m1", env.grains, env.pillar, env.opts))
    assert table["file.file_exists"](str(here)) is True
    assert table["cmd.has_exec"]("sh") is True
    assert table["cmd.run"](f"touch {marker}") == ""
    assert not marker.exists()


@pytest.mark.parametrize(("opts", "minion", "expected"), [
    ({"file_client": "local", "id": "web1"}, "web1", True),
    ({"file_client": "local", "id": "web1"}, "web2", False),  # another minion: offline rule
    ({"file_client": "remote", "id": "web1"}, "web1", False),  # a master's minion: compiled elsewhere
    ({"id": "web1"}, "web1", False),  # a master config (no file_client)
    ({"file_client": "local"}, "web1", False),
])
def test_which_compiles_are_for_this_host(opts: dict, minion: str, expected: bool) -> None:
    from runtime.pipeline import compiles_this_host

    assert compiles_this_host(opts, minion) is expected
