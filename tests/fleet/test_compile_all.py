"""`saltpan compile --all`: every minion in parallel, equal to one at a time; targets; errors; the default fleet."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from runtime.cli.fleet_compile import MinionOutcome, Progress
from tests.fleet.fixture import FLEET_SIZE, fleet_grains
from tests.fleet.helpers import compile_cli, compile_json, read_dir


@pytest.mark.parametrize("show", ["pillar", "lowstate"])
def test_parallel_compile_equals_sequential_compile(fleet_repo: Path, capsys, show: str) -> None:
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--show", show, "--out-dir", str(fleet_repo / "par"),
                               "--jobs", "2")
    assert code == 0, err
    assert f"compiled {FLEET_SIZE} minions" in err and "with 2 processes" in err
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--show", show, "--out-dir", str(fleet_repo / "seq"),
                               "--jobs", "1")
    assert code == 0, err
    parallel, sequential = read_dir(fleet_repo / "par"), read_dir(fleet_repo / "seq")
    assert len(parallel) == FLEET_SIZE
    assert parallel == sequential
    # and each file is what the one-minion compile prints
    for minion_id in ("web-0000", "db-0004", "app-0239"):
        single = compile_json(capsys, fleet_repo, "--minion", minion_id, "--show", show)
        assert json.loads(parallel[f"{minion_id}.json"]) == single


def test_all_prints_every_minion_as_json(fleet_repo: Path, capsys) -> None:
    data = compile_json(capsys, fleet_repo, "--all")
    assert sorted(data) == sorted(fleet_grains())
    assert data["db-0010"]["postgres"]["max_connections"] == 300  # db in dc1
    assert data["db-0004"]["postgres"]["max_connections"] == 100  # db in dc2


def test_out_dir_formats(fleet_repo: Path, capsys) -> None:
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--out", "yaml", "--out-dir", str(fleet_repo / "y"))
    assert code == 0, err
    files = read_dir(fleet_repo / "y")
    assert len(files) == FLEET_SIZE and all(name.endswith(".yaml") for name in files)
    assert yaml.safe_load(files["web-0000.yaml"])["nginx"]["port"] == 80


@pytest.mark.parametrize(("flags", "expected"), [
    (["--target", "web-*"], lambda m, g: m.startswith("web-")),
    (["--target", "dc:dc3", "-G"], lambda m, g: g["dc"] == "dc3"),
    (["--target", "G@role:db and not G@dc:dc1", "-C"], lambda m, g: g["role"] == "db" and g["dc"] != "dc1"),
    (["--target", "app-0002,db-0001,web-0000", "-L"], lambda m, g: m in ("app-0002", "db-0001", "web-0000")),
    (["--target", r"^(web|app)-00[0-2]\d$", "-E"], lambda m, g: m[:3] in ("web", "app") and int(m[-4:]) < 30),
    (["--target", "postgres:max_connections:300", "-I"], lambda m, g: g["role"] == "db" and g["dc"] == "dc1"),
    (["--target", "I@nginx:port:80 and G@dc:dc2", "-C"], lambda m, g: g["role"] == "web" and g["dc"] == "dc2"),
])
def test_targets_select_minions(fleet_repo: Path, capsys, flags: list[str], expected) -> None:
    data = compile_json(capsys, fleet_repo, "--all", *flags)
    want = sorted(m for m, g in fleet_grains().items() if expected(m, g))
    assert want and sorted(data) == want


def test_a_target_matching_nothing_is_an_error(fleet_repo: Path, capsys) -> None:
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--target", "nosuch-*")
    assert code == 2
    assert "matches none of the 240 minions" in err


def test_failed_minions_are_summarised_with_file_and_line(fleet_repo: Path, capsys) -> None:
    db = fleet_repo / "repo/pillar/roles/db.sls"
    db.write_text(db.read_text() + "  broken: {{ grains['no_such_grain'] }}\n")
    code, out, err = compile_cli(capsys, fleet_repo, "--all", "--out-dir", str(fleet_repo / "o"))
    assert code == 1
    failed = sorted(m for m, g in fleet_grains().items() if g["role"] == "db")
    lines = [line for line in err.splitlines() if line.startswith("db-")]
    assert sorted({line.split(":", 1)[0] for line in lines}) == failed
    assert all(f"{db}:5:" in line and "no_such_grain" in line for line in lines)
    assert f"{len(failed)} failed" in err
    written = read_dir(fleet_repo / "o")
    assert len(written) == FLEET_SIZE - len(failed)
    assert not any(name.startswith("db-") for name in written)
    code, out, _ = compile_cli(capsys, fleet_repo, "--all", "--out", "json")
    assert code == 1
    printed = json.loads(out)
    assert len(printed) == FLEET_SIZE  # a failed pillar is printed with its _errors, as for one minion
    assert printed["db-0001"]["_errors"] == ["Rendering SLS 'roles.db' failed. Please see master log for details."]


def test_default_fleet_is_the_masters_grains_cache(tmp_path: Path, capsys) -> None:
    from runtime.cli.main import main
    from runtime.master.store.sqlite_data import SQLiteDataCache
    from tests.fleet.fixture import make_repo

    make_repo(tmp_path)
    cache = SQLiteDataCache(str(tmp_path / "cache"))
    for minion_id, grains in list(fleet_grains().items())[:12]:
        cache.store(minion_id, "grains", grains)
    cache.close()
    code = main(["compile", "--config", str(tmp_path / "saltpan.conf"), "--all", "--out", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(json.loads(out)) == sorted(list(fleet_grains())[:12])


def test_no_fleet_at_all_says_what_to_do(tmp_path: Path, capsys) -> None:
    from runtime.cli.main import main
    from tests.fleet.fixture import make_repo

    make_repo(tmp_path)
    code = main(["compile", "--config", str(tmp_path / "saltpan.conf"), "--all"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "minion data cache" in err and "--fleet" in err


def test_fleet_supplies_grains_for_a_single_minion(fleet_repo: Path, capsys) -> None:
    data = compile_json(capsys, fleet_repo, "--minion", "web-0006")
    assert data["nginx"]["workers"] == 2 * fleet_grains()["web-0006"]["cpus"]
    code, _, err = compile_cli(capsys, fleet_repo, "--minion", "nobody")
    assert code == 2 and "not in the fleet" in err


def test_progress_bar_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Terminal()
    bar = Progress(4, stream=tty)
    for n in range(4):
        bar(MinionOutcome(f"m{n}", errors=["x"] if n == 2 else []))
    bar.close()
    assert "[" + "#" * 30 + "] 4/4 minions, 1 failed" in tty.getvalue()
    plain = io.StringIO()
    bar = Progress(4, stream=plain)
    bar(MinionOutcome("m0"))
    bar.close()
    assert plain.getvalue() == ""


@pytest.mark.parametrize(("argv", "message"), [
    (["--all", "--minion", "web-0000"], "either --all or --minion"),
    (["--all", "--explain", "nginx:port"], "explains one minion's value"),
    (["--all", "--diff", "HEAD", "--diff-to", "/tmp"], "either --diff REV or --diff-to DIR"),
    (["--minion", "web-0000", "--target", "web-*"], "use it with --all"),
    (["--all", "--jobs", "0"], "argument --jobs/-j: '0' must be at least 1"),
    (["--all", "--diff", "HEAD", "--show", "top"], "--diff compares pillar and lowstate"),
    (["--all", "--grains", "g.yaml"], "with --all the grains come from the fleet"),
    (["--minion", "web-0000", "--explain", "nginx::port"], "bad key"),
    (["--all", "--target", "G@role:web and (", "-C"], "--target"),
])
def test_usage_errors_exit_2(fleet_repo: Path, capsys, argv: list[str], message: str) -> None:
    code, _, err = compile_cli(capsys, fleet_repo, *argv)
    assert code == 2
    assert message in err


def test_out_dir_refuses_minion_ids_that_are_not_file_names(fleet_repo: Path, capsys) -> None:
    (fleet_repo / "fleet.yaml").write_text(yaml.safe_dump({"ok": {"role": "web"}, "../evil": {"role": "web"}}))
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--out-dir", str(fleet_repo / "o"))
    assert code == 2 and "'../evil' cannot name a file in --out-dir" in err
    assert not (fleet_repo / "o").exists() and not (fleet_repo / "evil.json").exists()
