"""How saltpan reads a command line (Salt's habits), and a --help that describes everything."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from runtime.cli import main as cli
from runtime.cli.parser import command_parsers, intermix, parse


def parsed(*argv: str) -> argparse.Namespace:
    return parse(cli.build_parser(), list(argv), cli.FUNCTION_COMMANDS)


@pytest.mark.parametrize(("argv", "fun", "args", "options"), [
    (["call", "state.apply", "test=True", "--out", "json"], "state.apply", ["test=True"], {"out": "json"}),
    (["call", "--local", "state.apply", "web", "--out=yaml", "-l", "debug"], "state.apply", ["web"],
     {"out": "yaml", "log_level": "debug", "local": True}),
    (["call", "test.arg", "-1", "-2.5"], "test.arg", ["-1", "-2.5"], {}),            # negative numbers are values
    (["call", "cmd.run", "--", "-h", "--out"], "cmd.run", ["-h", "--out"], {"out": None}),  # `--` ends the options
    (["run", "web*", "cmd.run", "ls -l", "-t", "3", "--static"], "cmd.run", ["ls -l"],
     {"timeout": 3.0, "static": True, "tgt": "web*"}),
    (["run", "-G", "role:web", "state.apply", "--state-output=terse", "-b", "25%"], "state.apply", [],
     {"tgt_type": "grain", "state_output": "terse", "batch": "25%"}),
    (["--no-color", "run", "*", "test.ping"], "test.ping", [], {"no_color": True}),
    (["run", "*", "test.ping", "--no-color"], "test.ping", [], {"no_color": True}),
])
def test_options_may_follow_the_function_arguments(argv: list[str], fun: str, args: list[str],
                                                   options: dict) -> None:
    ns = parsed(*argv)
    assert (ns.fun, ns.args) == (fun, args)
    for key, value in options.items():
        assert getattr(ns, key) == value, key


def test_an_unknown_option_after_the_arguments_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parsed("call", "state.apply", "--state-outpt=terse")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("saltpan call: error: no such option: --state-outpt (did you mean "
                                       "'--state-output'?); see 'saltpan call --help'\n")


def test_intermix_keeps_an_option_value_that_looks_like_an_argument() -> None:
    parser = command_parsers(cli.build_parser())["run"]
    assert intermix(["*", "test.ping", "--out", "json", "x=1"], parser) == ["--out", "json", "*", "test.ping", "x=1"]
    assert intermix(["*", "cmd.run", "--", "-x"], parser) == ["--", "*", "cmd.run", "-x"]


def walk(parser: argparse.ArgumentParser, path: str = "saltpan"):
    yield path, parser
    for name, child in command_parsers(parser).items():
        yield from walk(child, f"{path} {name}")


def test_every_option_and_argument_is_described() -> None:
    """--help stands in for a man page: every command has a description, every option and
    positional argument a help text."""
    missing = []
    for path, parser in walk(cli.build_parser()):
        if path != "saltpan" and not parser.description:
            missing.append(f"{path}: no description")
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path}: {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


@pytest.mark.parametrize("command", ["compile", "call", "run", "key", "jobs", "event", "minions", "master",
                                     "minion", "swarm", "completion"])
def test_help_of_each_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: saltpan {command}" in text and "--no-color" in text and "--debug" in text


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "states").mkdir()
    (tmp_path / "states" / "top.sls").write_text("base:\n  '*':\n    - ok\n")
    (tmp_path / "states" / "ok.sls").write_text("fine:\n  test.succeed_without_changes: []\n")
    (tmp_path / "minion").write_text(f"file_client: local\nid: t1\nroot_dir: {tmp_path}\nstate_output: terse\n"
                                     f"file_roots: {{base: [{tmp_path}/states]}}\n"
                                     f"pillar_roots: {{base: [{tmp_path}/states]}}\n")
    return tmp_path


def test_state_output_from_the_config_and_the_command_line(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["call", "-c", str(tree / "minion"), "state.apply"]) == 0
    assert "  Name: fine - Function: test.succeed_without_changes - Result: Clean" in capsys.readouterr().out
    assert cli.main(["call", "-c", str(tree / "minion"), "state.apply", "--state-output", "full"]) == 0
    assert "          ID: fine" in capsys.readouterr().out
    assert cli.main(["call", "-c", str(tree / "minion"), "state.apply", "--state-verbose=false"]) == 0
    out = capsys.readouterr().out
    assert "fine" not in out and "Succeeded: 1" in out


def test_out_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tree / "out.json"
    argv = ["call", "-c", str(tree / "minion"), "test.echo", "one", "--out", "json", "--out-file", str(target)]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == ""
    assert cli.main([*argv[:-2], "--out-file", str(target), "--out-file-append"]) == 0
    assert target.read_text().count('"local": "one"') == 2


def test_call_exit_status_and_retcode_passthrough(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["call", "-c", str(tree / "minion")]
    assert cli.main([*base, "cmd.run", "exit 3"]) == 1                              # salt-call: 1
    assert cli.main([*base, "cmd.run", "exit 3", "--retcode-passthrough"]) == 3     # the command's own
    assert cli.main([*base, "test.ping", "--retcode-passthrough"]) == 0
    capsys.readouterr()


def test_state_retcodes_are_salts() -> None:
    """salt.defaults.exitcodes: EX_PILLAR_FAILURE 5, EX_STATE_COMPILER_ERROR 1, EX_STATE_FAILURE 2."""
    from runtime.state_returns import PILLAR_FAILED, state_retcode

    assert state_retcode([PILLAR_FAILED, "/srv/pillar/web.sls:2: Rendering SLS 'web' failed"]) == 5
    assert state_retcode(["No matching sls found for 'x' in env 'base'"]) == 1
    assert state_retcode({"a": {"result": False}, "b": {"result": True}}) == 2
    assert state_retcode({"a": {"result": None}}) == 0


def test_the_command_table_is_what_the_modules_register() -> None:
    """``COMMANDS`` (which module to build for a command line) lists every command, in --help's order."""
    assert list(command_parsers(cli.build_parser())) == list(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(set(cli.COMMANDS) - {"completion"}))
def test_a_command_line_builds_only_its_commands_module(command: str) -> None:
    module = cli.COMMANDS[command]
    built = command_parsers(cli.build_parser(cli.typed_command(["--no-color", command, "--help"])))
    assert command in built
    assert set(built) == {name for name, owner in cli.COMMANDS.items() if owner == module}


@pytest.mark.parametrize("words", [["-h", "run"], ["--version", "run"], ["rnu", "x"], [], ["completion", "bash"]])
def test_help_a_misspelt_command_and_completion_build_every_command(words: list[str]) -> None:
    assert list(command_parsers(cli.build_parser(cli.typed_command(words)))) == list(cli.COMMANDS)


def test_a_misspelt_command_still_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rnu", "*", "test.ping"])
    assert exit_info.value.code == 2
    assert "did you mean 'run'?" in capsys.readouterr().err
