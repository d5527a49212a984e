"""Pieces of the execution-plane CLI that need no daemon: config lookup, salt-key text, StartTime."""

from __future__ import annotations

from runtime.cli.options import config_path
from runtime.cli.plane import jid_to_time, key_lines


def test_config_path_file_directory_and_default(tmp_path):
    conf = tmp_path / "master"
    conf.write_text("interface: 127.0.0.1\n")
    assert config_path(str(conf), "master") == str(conf)
    assert config_path(str(tmp_path), "master") == str(conf)  # Salt's -c DIR
    assert config_path(str(tmp_path), "minion") == str(tmp_path / "minion")  # named, then reported missing
    assert config_path(None, "master", default_dir=str(tmp_path)) == str(conf)
    assert config_path(None, "minion", default_dir=str(tmp_path)) is None  # no file: defaults only


def test_key_lines_follow_salt_key():
    listing = {"minions": ["b", "a"], "minions_pre": [], "minions_rejected": ["r"], "minions_denied": []}
    assert key_lines(listing) == ["Accepted Keys:", "a", "b", "Denied Keys:", "Unaccepted Keys:",
                                  "Rejected Keys:", "r"]
    assert key_lines({"minions_pre": {"web01": "ab:cd"}}) == ["Unaccepted Keys:", "web01:  ab:cd"]


def test_jid_to_time():
    assert jid_to_time("20261122005921979262") == "2026, Nov 22 00:59:21.979262"
    assert jid_to_time("not a jid") == ""
    assert jid_to_time("20261322005921979262") == ""


def test_call_exit_status_follows_the_retcode(capsys):
    """`saltpan call` exits 1 when a cmd.* command fails or test.retcode asks for it, as salt-call."""
    from runtime.cli import main as cli

    assert cli.main(["call", "--local", "cmd.run", "exit 3"]) == 1
    assert cli.main(["call", "--local", "cmd.run", "echo fine"]) == 0
    assert cli.main(["call", "--local", "test.retcode", "7"]) == 1
    assert cli.main(["call", "--local", "test.retcode", "0"]) == 0
    capsys.readouterr()


def test_a_twenty_digit_jid_stays_text():
    from runtime.cli.options import parse_fun_args

    assert parse_fun_args(["20261122005921979262", "42", "x=7"]) == (["20261122005921979262", 42], {"x": 7})
