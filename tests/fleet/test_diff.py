"""`saltpan compile --all --diff REV | --diff-to DIR`: exactly the minions a change touches, and nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.fleet.fixture import fleet_grains, git
from tests.fleet.helpers import compile_cli

NEW_WEB_STATE = """
{% if grains['dc'] == 'dc3' %}
logrotate-nginx:
  file.managed:
    - name: /etc/logrotate.d/nginx
    - contents: rotate 7
{% endif %}
"""


def change_trees(repo: Path) -> None:
    """db in dc1: max_connections 300 -> 400 (pillar and a state); web in dc3: one new state; app: a comment."""
    (repo / "pillar/special/db_dc1.sls").write_text("postgres:\n  max_connections: 400\n")
    web = repo / "states/web.sls"
    web.write_text(web.read_text() + NEW_WEB_STATE)
    app = repo / "pillar/roles/app.sls"
    app.write_text("# the shop application\n" + app.read_text())


def expected_minions() -> list[str]:
    return sorted(m for m, g in fleet_grains().items()
                  if (g["role"], g["dc"]) in (("db", "dc1"), ("web", "dc3")))


def diff_json(capsys, root: Path, *argv: str) -> tuple[int, dict, str]:
    code, out, err = compile_cli(capsys, root, "--all", *argv, "--out", "json")
    return code, json.loads(out) if out.strip() else {}, err


def checkout_state(repo: Path) -> tuple[str, str, str, str]:
    return (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list"),
            git(repo, "stash", "list"))


def test_diff_across_two_commits_lists_exactly_the_changed_minions(fleet_repo: Path, capsys) -> None:
    repo = fleet_repo / "repo"
    old = git(repo, "rev-parse", "HEAD")
    change_trees(repo)
    git(repo, "commit", "-qam", "db dc1 connections, web dc3 logrotate")
    before = checkout_state(repo)
    code, data, err = diff_json(capsys, fleet_repo, "--diff", old)
    assert code == 1, err
    assert sorted(data["minions"]) == expected_minions()
    assert (data["compared"], data["different"], data["errors"]) == (240, len(expected_minions()), {})
    db = data["minions"]["db-0010"]
    assert db["pillar"] == [{"key": "postgres:max_connections", "change": "changed", "old": 300, "new": 400}]
    assert [(s["change"], s["tag"], [a["name"] for a in s["arguments"]]) for s in db["states"]] == [
        ("changed", "file_|-/etc/postgresql/postgresql.conf_|-/etc/postgresql/postgresql.conf_|-managed",
         ["contents"])]
    assert db["states"][0]["arguments"][0]["new"] == "max_connections = 400"
    web = data["minions"]["web-0006"]  # web in dc3
    assert web["pillar"] == []
    assert [(s["change"], s["id"], s["function"]) for s in web["states"]] == [
        ("added", "logrotate-nginx", "file.managed")]
    db_dc1 = sum(1 for m in expected_minions() if m.startswith("db-"))
    web_dc3 = len(expected_minions()) - db_dc1
    assert {s["change"]: s["minions"] for s in data["summary"]} == {
        "pillar postgres:max_connections changed": db_dc1,
        "state /etc/postgresql/postgresql.conf (file.managed, sls db) changed": db_dc1,
        "state logrotate-nginx (file.managed, sls web) added": web_dc3,
    }
    # the user's checkout is untouched: same HEAD, clean status, no extra worktree or stash
    assert checkout_state(repo) == before


def test_human_diff_report(fleet_repo: Path, capsys) -> None:
    repo = fleet_repo / "repo"
    change_trees(repo)
    git(repo, "commit", "-qam", "change")
    code, out, _ = compile_cli(capsys, fleet_repo, "--all", "--diff", "HEAD~1")
    assert code == 1
    assert "db-0010:\n  pillar:\n    postgres:max_connections: 300 -> 400\n  states:\n" \
           "    ~ file_|-/etc/postgresql/postgresql.conf" in out
    assert "    + file_|-logrotate-nginx_|-/etc/logrotate.d/nginx_|-managed  (sls web)" in out
    assert out.rstrip().endswith(f"{len(expected_minions())} of 240 minions differ, "
                                 f"{240 - len(expected_minions())} unchanged.")


def test_no_change_exits_0(fleet_repo: Path, capsys) -> None:
    code, data, err = diff_json(capsys, fleet_repo, "--diff", "HEAD")
    assert (code, data["minions"], data["different"]) == (0, {}, 0), err


def test_uncommitted_changes_are_the_new_side(fleet_repo: Path, capsys) -> None:
    app = fleet_repo / "repo/pillar/roles/app.sls"
    app.write_text(app.read_text().replace("port: 8000", "port: 8001"))
    code, data, _ = diff_json(capsys, fleet_repo, "--diff", "HEAD", "--show", "pillar")
    assert code == 1
    assert sorted(data["minions"]) == sorted(m for m in fleet_grains() if m.startswith("app-"))
    assert {s["change"]: s["minions"] for s in data["summary"]} == {"pillar app:port changed": 80}


def test_diff_to_another_copy_of_the_roots(fleet_repo: Path, capsys) -> None:
    candidate = fleet_repo / "candidate"
    shutil.copytree(fleet_repo / "repo", candidate, ignore=shutil.ignore_patterns(".git"))
    change_trees(candidate)
    code, data, err = diff_json(capsys, fleet_repo, "--diff-to", str(candidate))
    assert code == 1, err
    assert sorted(data["minions"]) == expected_minions()
    assert data["minions"]["db-0010"]["pillar"][0]["new"] == 400  # the candidate is the new side


def test_a_new_key_a_removed_key_and_a_removed_state(fleet_repo: Path, capsys) -> None:
    repo = fleet_repo / "repo"
    (repo / "pillar/roles/app.sls").write_text("app:\n  name: shop\n  workers: 4\n")
    (repo / "states/db.sls").write_text((repo / "states/db.sls").read_text().split("/root/.pgpass")[0])
    code, data, _ = diff_json(capsys, fleet_repo, "--diff", "HEAD")
    assert code == 1
    app = data["minions"]["app-0002"]["pillar"]
    assert app == [{"key": "app:port", "change": "removed", "old": 8000, "new": None},
                   {"key": "app:workers", "change": "added", "old": None, "new": 4}]
    assert [(s["change"], s["id"]) for s in data["minions"]["db-0001"]["states"]] == [("removed", "/root/.pgpass")]


def test_secrets_are_masked_in_the_diff_unless_unmask(fleet_repo: Path, capsys) -> None:
    db = fleet_repo / "repo/pillar/roles/db.sls"
    db.write_text(db.read_text().replace("db-secret-pw-4242", "db-secret-pw-5353"))
    code, data, _ = diff_json(capsys, fleet_repo, "--diff", "HEAD")
    assert code == 1
    minion = data["minions"]["db-0001"]
    assert minion["pillar"] == [{"key": "postgres:password", "change": "changed", "old": "**********",
                                 "new": "**********"}]
    [pgpass] = minion["states"]
    assert pgpass["arguments"] == [{"name": "contents", "old": "*:*:*:postgres:**********",
                                    "new": "*:*:*:postgres:**********"}]
    code, out, _ = compile_cli(capsys, fleet_repo, "--all", "--diff", "HEAD")
    assert "4242" not in out and "5353" not in out
    code, data, _ = diff_json(capsys, fleet_repo, "--diff", "HEAD", "--unmask")
    assert data["minions"]["db-0001"]["pillar"][0]["new"] == "db-secret-pw-5353"


def test_compile_errors_exit_2_naming_the_side_and_file(fleet_repo: Path, capsys) -> None:
    web = fleet_repo / "repo/pillar/roles/web.sls"
    web.write_text(web.read_text() + "broken: {{ grains['nope'] }}\n")
    code, data, err = diff_json(capsys, fleet_repo, "--diff", "HEAD")
    assert code == 2
    assert sorted(data["errors"]) == sorted(m for m in fleet_grains() if m.startswith("web-"))
    assert f"web-0000: new tree: {web}:12:" in err


def test_bad_revision_and_roots_outside_git(fleet_repo: Path, capsys) -> None:
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--diff", "no-such-branch")
    assert code == 2 and "'no-such-branch' is not a commit of the git repository" in err
    shutil.rmtree(fleet_repo / "repo/.git")
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--diff", "HEAD")
    assert code == 2 and "is not in a git repository" in err and "--diff-to" in err
    code, _, err = compile_cli(capsys, fleet_repo, "--all", "--diff-to", str(fleet_repo / "nowhere"))
    assert code == 2 and "no such directory" in err


def test_a_symlink_leading_out_of_the_tree_does_not_stop_the_export(fleet_repo: Path, capsys) -> None:
    repo = fleet_repo / "repo"
    (repo / "pillar/outside").symlink_to("/etc")
    (repo / "pillar/local").symlink_to("common")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    code, data, err = diff_json(capsys, fleet_repo, "--diff", "HEAD", "--show", "pillar")
    assert (code, data["different"]) == (0, 0), err
