"""Every bad input a user can give a saltpan command, one row each: the exit status, the message,
and never a traceback.

The classes of bad input (issue 18): a wrong type or value, a missing file, a bad file, an unknown
name (option, command, choice, function, state, minion, job), a missing prerequisite (no master
here), contradicting options.  Each row runs the real command (`python -m runtime ...`) in a
workspace of its own: configs, trees and grains files with the mistakes people make, a master
that never ran and one that ran but is stopped.  Rows with a running master are in
tests/integration/test_cli_plane.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.unit.helpers import write_tree

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Row:
    id: str
    argv: tuple[str, ...]        # {ws} is the workspace
    code: int
    says: tuple[str, ...]        # substrings of stderr (stdout too with where="any")
    where: str = "err"           # err | out | any
    one_line: bool = True        # stderr is exactly one line
    not_says: tuple[str, ...] = field(default=())


def row(id: str, argv: str, code: int, *says: str, where: str = "err", one_line: bool = True,
        not_says: tuple[str, ...] = ()) -> Row:
    return Row(id, tuple(argv.split()), code, says, where, one_line, not_says)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("cli")
    roots = {"file_roots": {"base": [str(base / "states")]}, "pillar_roots": {"base": [str(base / "pillar")]}}

    def conf(name: str, **opts: object) -> None:
        data = {"file_client": "local", "id": "web01", "root_dir": str(base / "root"), **roots,
                "grains": {"role": "web"}, **opts}
        (base / name).write_text(yaml.safe_dump(data), encoding="utf-8")

    write_tree(base, {
        "states/top.sls": "base:\n  '*':\n    - web\n",
        "states/web.sls": "hello:\n  test.succeed_without_changes: []\n",
        "typo/top.sls": "base:\n  '*':\n    - web\n",
        "typo/web.sls": """
            hello:
              file.manged:
                - name: /tmp/never-written
                - contents: hi
            world:
              test.succeed_without_changes:
                - nmae: x
            """,
        "failing/top.sls": "base:\n  '*':\n    - web\n",
        "failing/web.sls": "broken:\n  test.fail_without_changes: []\n",
        "pillar/top.sls": "base:\n  '*':\n    - common\n",
        "pillar/common.sls": "common: 1\n",
        "badpillar/top.sls": "base:\n  '*':\n    - roles.web\n",
        "badpillar/roles/web.sls": "a: [1, 2\nb: 3\n",
        "missingsls/top.sls": "base:\n  '*':\n    - nowhere\n",
        "grains_bad.yaml": "role: [web\n",
        "grains_list.yaml": "- web\n- db\n",
        "grains_ok.yaml": "role: web\n",
        "fleet.yaml": "web01: {role: web}\ndb01: {role: db}\n",
        "conf_yaml_error.yaml": "id: web01\nfile_roots: [a\n",
        "conf_list.yaml": "- id\n- web01\n",
        "conf_wrong_type.yaml": "file_roots: 5\n",
        "conf_bad_strategy.yaml": "top_file_merging_strategy: mix\n",
    })
    conf("good.conf")
    conf("typo.conf", file_roots={"base": [str(base / "typo")]})
    conf("failing.conf", file_roots={"base": [str(base / "failing")]})
    conf("badpillar.conf", pillar_roots={"base": [str(base / "badpillar")]})
    conf("missingsls.conf", file_roots={"base": [str(base / "missingsls")]})
    conf("badgrains.conf", grains_file=str(base / "grains_bad.yaml"))
    conf("listgrains.conf", grains_file=str(base / "grains_list.yaml"))
    conf("nograinsfile.conf", grains_file=str(base / "absent.yaml"))
    conf("remote.conf", file_client="remote")
    conf("keytypo.conf", pillar_root={"base": [str(base / "pillar")]})
    conf("noroots.conf", file_roots={"base": [str(base / "nostates")]})
    conf("fleet.conf", fleet_file=str(base / "fleet.yaml"), grains={})
    (base / "bare.conf").write_text(yaml.safe_dump(roots), encoding="utf-8")
    # a master that never ran, and one that ran once (its key pair) but does not run now
    # (a port nothing listens on: another master may run on this machine's default 4506)
    for name in ("never", "stopped"):
        (base / f"{name}.master").write_text(yaml.safe_dump({"root_dir": str(base / name), "ret_port": unused_port(),
                                                              "sock_dir": str(base / name / "sock")}))
    pki = base / "stopped" / "etc" / "saltpan" / "pki" / "master"
    pki.mkdir(parents=True)
    (pki / "master.pub").write_text("not read by these commands\n")
    # a minion whose grains file is broken: it must refuse to start, with file:line
    (base / "daemon.conf").write_text(yaml.safe_dump({
        "id": "m1", "root_dir": str(base / "m1"), "master": "127.0.0.1", "master_port": 9,
        "grains_file": str(base / "grains_bad.yaml"), "log_file": str(base / "m1.log")}))
    return base


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


NO_MASTER = "no master has run here: no master key at"
NOT_RUNNING = "no master is running here"

ROWS = [
    # -- the command line itself: unknown names, bad values -----------------------------------
    row("unknown-command", "compiel", 2, "invalid choice 'compiel' (did you mean 'compile'?)"),
    row("no-command", "", 2, "usage: saltpan", one_line=False),
    row("unknown-option", "compile --minon web01", 2, "no such option: --minon (did you mean '--minion'?)"),
    row("bad-choice", "compile --show lowstat", 2, "invalid choice 'lowstat' (did you mean 'lowstate'?)"),
    row("bad-out", "compile --out jsn", 2, "invalid choice 'jsn' (did you mean 'json'?)"),
    row("bad-log-level", "compile -l verbose", 2, "argument -l/--log-level: invalid choice 'verbose'"),
    row("jobs-zero", "compile --all --jobs 0", 2, "argument --jobs/-j: '0' must be at least 1"),
    row("jobs-not-a-number", "compile --all --jobs many", 2, "'many' is not a whole number"),
    row("completion-shell", "completion fish", 2, "invalid choice 'fish'"),
    row("swarm-count", "swarm --count 0", 2, "argument --count/-n: '0' must be at least 1"),
    row("out-file-append-alone", "call --local -c {ws}/good.conf test.ping --out-file-append", 2,
        "--out-file-append appends to the file of --out-file FILE: give both"),
    row("out-file-missing-dir", "call --local -c {ws}/good.conf test.ping --out-file {ws}/no/such/dir/out", 2,
        "cannot write --out-file {ws}/no/such/dir/out: No such file or directory"),
    # -- compile: files and names ------------------------------------------------------------
    row("config-missing", "compile -c {ws}/nope.conf --minion web01", 2,
        "cannot read config file {ws}/nope.conf: No such file or directory"),
    row("config-yaml-error", "compile -c {ws}/conf_yaml_error.yaml --minion web01", 2,
        "{ws}/conf_yaml_error.yaml:3: config file is not valid YAML"),
    row("config-not-a-mapping", "compile -c {ws}/conf_list.yaml --minion web01", 2,
        "{ws}/conf_list.yaml: a config file must be a mapping of option: value, got list"),
    row("config-wrong-type", "compile -c {ws}/conf_wrong_type.yaml --minion web01", 2,
        "{ws}/conf_wrong_type.yaml: option 'file_roots' must be"),
    row("config-bad-value", "compile -c {ws}/conf_bad_strategy.yaml --minion web01", 2,
        "top_file_merging_strategy must be merge, same or merge_all (got 'mix')"),
    row("config-key-typo", "compile -c {ws}/keytypo.conf", 0,
        "'pillar_root' is neither a Salt 3008 option nor a saltpan one: ignored (did you mean 'pillar_roots'?)"),
    row("compile-no-minion", "compile -c {ws}/bare.conf", 2, "compile needs --minion ID"),
    row("grains-missing", "compile -c {ws}/good.conf --grains {ws}/nope.yaml", 2,
        "cannot read grains file {ws}/nope.yaml: No such file or directory"),
    row("grains-yaml-error", "compile -c {ws}/good.conf --grains {ws}/grains_bad.yaml", 2,
        "{ws}/grains_bad.yaml:2: grains file is not valid YAML"),
    row("grains-list", "compile -c {ws}/good.conf --grains {ws}/grains_list.yaml", 2,
        "{ws}/grains_list.yaml: a grains file must be a mapping of grain: value, got a list"),
    row("grains-file-configured-missing", "compile -c {ws}/nograinsfile.conf", 2,
        "grains_file {ws}/absent.yaml (config {ws}/nograinsfile.conf) does not exist"),
    row("fleet-missing", "compile -c {ws}/good.conf --fleet {ws}/nofleet.yaml", 2,
        "fleet source {ws}/nofleet.yaml does not exist"),
    row("minion-not-in-fleet", "compile -c {ws}/good.conf --fleet {ws}/fleet.yaml --minion web1", 2,
        "minion 'web1' is not in the fleet {ws}/fleet.yaml (did you mean 'web01'?)"),
    row("minion-not-in-config-fleet", "compile -c {ws}/fleet.conf --minion web1", 2,
        "minion 'web1' is not in the fleet {ws}/fleet.yaml (did you mean 'web01'?) and has no grains here"),
    row("minion-without-grains", "compile -c {ws}/bare.conf --minion web1", 0,
        "warning: minion 'web1' has no grains here (no fleet file, none in the config, no --grains)"),
    row("unknown-saltenv", "compile -c {ws}/good.conf --saltenv bse --show lowstate", 0,
        "warning: --saltenv 'bse' is not an environment of file_roots (base) (did you mean 'base'?)"),
    row("unknown-pillarenv", "compile -c {ws}/good.conf --pillarenv prod", 0,
        "warning: --pillarenv 'prod' is not an environment of pillar_roots (base)"),
    row("file-roots-missing", "compile -c {ws}/noroots.conf --show lowstate", 0,
        "warning: file_roots base: {ws}/nostates does not exist (config {ws}/noroots.conf): nothing is read from it"),
    row("out-dir-is-a-file", "compile -c {ws}/fleet.conf --all --out-dir {ws}/fleet.yaml", 2,
        "--out-dir {ws}/fleet.yaml is a file: give a directory"),
    row("out-dir-cannot-be-created", "compile -c {ws}/fleet.conf --all --out-dir /proc/no/such", 2,
        "cannot create --out-dir /proc/no/such: No such file or directory"),
    row("target-as-a-positional-word", "compile -c {ws}/fleet.conf --all -G role:web", 2,
        "unexpected argument 'role:web': compile takes no positional words; a fleet target is --target TARGET"),
    row("all-and-minion", "compile -c {ws}/good.conf --all --minion web01", 2,
        "give either --all or --minion ID, not both"),
    row("unknown-state-function", "compile -c {ws}/typo.conf --show lowstate", 1,
        "error: {ws}/typo/web.sls:1: ID 'hello': state 'file.manged' is not available: module 'file' has no "
        "function 'manged' (did you mean 'file.managed'?)", one_line=False),
    row("unknown-state-argument", "compile -c {ws}/typo.conf --show highstate", 1,
        "warning: {ws}/typo/web.sls:5: ID 'world': 'nmae' is not an argument of test.succeed_without_changes "
        "(did you mean 'name'?)", one_line=False),
    row("pillar-yaml-error", "compile -c {ws}/badpillar.conf", 1,
        "{ws}/badpillar/roles/web.sls:2: Rendering SLS 'roles.web' failed: YAML syntax error", one_line=False),
    row("missing-sls", "compile -c {ws}/missingsls.conf --show lowstate", 1, "nowhere", one_line=False),
    # -- call: functions, arguments, the host's files ----------------------------------------
    row("call-unknown-function", "call --local -c {ws}/good.conf state.aply", 2,
        "'state.aply' is not available (did you mean 'state.apply'?)"),
    row("call-unknown-module", "call --local -c {ws}/good.conf nosuchmod.fun", 2,
        "saltpan has no execution module 'nosuchmod'", not_says=("did you mean",)),
    row("call-function-without-module", "call --local -c {ws}/good.conf ping", 2,
        "'ping' is not available (did you mean 'test.ping'?)"),
    row("call-test-not-boolean", "call --local -c {ws}/good.conf state.apply test=Tru", 2,
        "test='Tru' is not a boolean: nothing was applied; pass test=True (a dry run) or test=False"),
    row("call-option-typo-after-args", "call --local -c {ws}/good.conf state.apply --state-outpt=terse", 2,
        "no such option: --state-outpt (did you mean '--state-output'?)"),
    row("call-bad-state-output", "call --local -c {ws}/good.conf state.apply --state-output terrse", 2,
        "invalid choice 'terrse' (did you mean 'terse'?)"),
    row("call-state-verbose-not-boolean", "call --local -c {ws}/good.conf state.apply --state-verbose maybe", 2,
        "'maybe' is not a boolean: give true or false"),
    row("call-missing-argument", "call --local -c {ws}/good.conf test.echo", 1,
        "Passed invalid arguments to test.echo: missing a required argument: 'text'",
        "usage: saltpan call --local sys.doc test.echo"),
    row("call-command-of-wrong-type", "call --local -c {ws}/good.conf cmd.run {a:1}", 1,
        "the command must be a command line or a list of words, got a dict"),
    row("call-not-masterless", "call -c {ws}/remote.conf test.ping", 2,
        "only masterless calls are supported here: pass --local"),
    row("call-config-missing", "call --local -c {ws}/nope.conf test.ping", 2,
        "cannot read config file {ws}/nope.conf"),
    row("call-config-dir-without-minion", "call --local -c {ws}/states test.ping", 2,   # -c DIR reads DIR/minion
        "cannot read config file {ws}/states/minion: No such file or directory"),
    row("call-grains-yaml-error", "call --local -c {ws}/badgrains.conf grains.items", 2,
        "{ws}/grains_bad.yaml:2: grains file is not valid YAML"),
    row("call-grains-list", "call --local -c {ws}/listgrains.conf grains.items", 2,
        "{ws}/grains_list.yaml: a grains file must be a mapping of grain: value, got a list"),
    row("call-grains-file-missing", "call --local -c {ws}/nograinsfile.conf grains.items", 2,
        "grains_file {ws}/absent.yaml (config {ws}/nograinsfile.conf) does not exist"),
    row("call-pillar-error-names-the-file", "call --local -c {ws}/badpillar.conf state.apply", 1,
        "[CRITICAL] Pillar render error: {ws}/badpillar/roles/web.sls:2: Rendering SLS 'roles.web' failed: "
        "YAML syntax error", "Pillar failed to render with the following messages:", where="any"),
    row("call-unknown-state-at-run-time", "call --local -c {ws}/typo.conf state.apply test=True", 1,
        "State 'file.manged' was not found in SLS 'web'",
        "ID 'hello' is declared at {ws}/typo/web.sls:1; did you mean 'file.managed'?", where="out"),
    row("call-unknown-sls", "call --local -c {ws}/good.conf state.apply nosuchsls", 1,
        "No matching sls found for 'nosuchsls' in env 'base'", where="out"),
    row("call-top-matches-nothing", "call --local -c {ws}/good.conf state.apply saltenv=nosuch", 1,
        "No Top file or master_tops data matches found", where="out"),
    row("call-pillar-error-passthrough", "call --local -c {ws}/badpillar.conf state.apply --retcode-passthrough", 5,
        "Pillar failed to render", where="out"),   # salt-call: EX_PILLAR_FAILURE
    row("call-pillar-items-error-names-the-file", "call --local -c {ws}/badpillar.conf pillar.items", 0,
        "[CRITICAL] Pillar render error: {ws}/badpillar/roles/web.sls:2: Rendering SLS 'roles.web' failed: "
        "YAML syntax error"),   # its _errors say "see master log": masterless, the console is that log
    row("call-missing-file", "call --local -c {ws}/good.conf file.read {ws}/nowhere.txt", 1,
        "Error running 'file.read': No such file or directory: {ws}/nowhere.txt", not_says=("Errno",)),
    row("call-file-roots-missing", "call --local -c {ws}/noroots.conf state.apply", 1,
        "file_roots base: {ws}/nostates does not exist (config {ws}/noroots.conf): nothing is read from it"),
    row("call-failed-state", "call --local -c {ws}/failing.conf state.apply", 1, "Failed:    1", where="out"),
    row("call-failed-state-passthrough", "call --local -c {ws}/failing.conf state.apply --retcode-passthrough", 2,
        "Failed:    1", where="out", one_line=False),
    # -- the plane without a master ----------------------------------------------------------
    row("run-no-master", "run -c {ws}/never.master * test.ping", 2,
        "no master is running here: no master key at {ws}/never/etc/saltpan/pki/master/master.pub"),
    row("run-master-stopped", "run -c {ws}/stopped.master * test.ping", 2,
        f"{NOT_RUNNING}: no event bus at {{ws}}/stopped/sock/master_event_pub.ipc"),
    row("run-timeout-not-a-number", "run -c {ws}/never.master -t soon * test.ping", 2,
        "argument --timeout/-t: 'soon' is not a number"),
    row("run-timeout-negative", "run -c {ws}/never.master --timeout=-1 * test.ping", 2,
        "argument --timeout/-t: '-1' must be a number above 0"),
    row("run-batch-zero", "run -c {ws}/never.master -b 0 * test.ping", 2, "'0' is not a batch size"),
    row("run-batch-word", "run -c {ws}/never.master --batch all * test.ping", 2, "'all' is not a batch size"),
    row("run-batch-wait-negative", "run -c {ws}/never.master -b 2 --batch-wait=-3 * test.ping", 2,
        "argument --batch-wait: '-3' must be a number, 0 or more"),
    row("run-async-batch", "run -c {ws}/never.master -b 2 --async * test.ping", 2,
        "--async cannot run a batch"),
    row("run-batch-wait-without-batch", "run -c {ws}/never.master --batch-wait 2 * test.ping", 2,
        "--batch-wait is an option of batches: add --batch N (or P%)"),
    row("run-failhard-without-batch", "run -c {ws}/never.master * test.ping --failhard", 2,
        "--failhard is an option of batches"),
    row("run-option-typo-after-args", "run -c {ws}/never.master * state.apply --state-outpt=terse", 2,
        "no such option: --state-outpt (did you mean '--state-output'?)"),
    row("run-test-not-boolean", "run -c {ws}/never.master * state.apply test=Tru", 2,
        "test='Tru' is not a boolean: nothing was applied"),
    row("run-two-target-types", "run -c {ws}/never.master -E -L web01 test.ping", 2,
        "argument -L/--list: not allowed with argument -E/--pcre"),
    row("run-no-function", "run -c {ws}/never.master web01", 2, "the following arguments are required: FUNCTION"),
    row("key-no-master", "key -c {ws}/never.master -L", 2, NO_MASTER),
    row("key-two-actions", "key -c {ws}/stopped.master -a web01 -d db01", 2,
        "argument -d/--delete: not allowed with argument -a/--accept"),
    row("key-unknown-glob", "key -c {ws}/stopped.master -a nosuch -y", 0,
        "The key glob 'nosuch' does not match any unaccepted keys.", where="out"),
    row("key-bad-out", "key -c {ws}/stopped.master --out yml", 2, "invalid choice 'yml'"),
    row("jobs-no-master", "jobs -c {ws}/never.master list", 2, NO_MASTER),
    row("jobs-bad-action", "jobs -c {ws}/stopped.master lst", 2, "invalid choice 'lst' (did you mean 'list'?)"),
    row("jobs-lookup-without-jid", "jobs -c {ws}/stopped.master lookup", 2, "lookup needs a JID"),
    row("jobs-list-with-jid", "jobs -c {ws}/stopped.master list 20260101000000000000", 2,
        "did you mean 'saltpan jobs lookup 20260101000000000000'?"),
    row("jobs-unknown-jid", "jobs -c {ws}/stopped.master lookup 20260101000000000000", 2,
        "no job 20260101000000000000 in the job cache"),
    row("jobs-limit-zero", "jobs -c {ws}/stopped.master list --limit 0", 2, "'0' must be at least 1"),
    row("jobs-active-master-stopped", "jobs -c {ws}/stopped.master active", 2, NOT_RUNNING),
    row("event-master-stopped", "event -c {ws}/stopped.master listen", 2, NOT_RUNNING),
    row("event-bad-action", "event -c {ws}/stopped.master lisen", 2, "invalid choice 'lisen' (did you mean 'listen'?)"),
    row("event-count-negative", "event -c {ws}/stopped.master listen --count=-2", 2, "'-2' must be at least 1"),
    row("minions-no-master", "minions -c {ws}/never.master --status", 2, NO_MASTER),
    row("minions-bad-out", "minions -c {ws}/stopped.master --out xml", 2, "invalid choice 'xml'"),
    row("fileserver-master-stopped", "fileserver -c {ws}/stopped.master update", 2,
        "the master is not running: nothing answers on"),
    row("fileserver-bad-action", "fileserver -c {ws}/stopped.master updte", 2,
        "invalid choice 'updte' (did you mean 'update'?)"),
    row("fileserver-unknown-argument", "fileserver -c {ws}/stopped.master file_list env=base", 2,
        "fileserver file_list: unknown argument 'env' (valid: backend, saltenv)"),
    row("fileserver-positional-argument", "fileserver -c {ws}/stopped.master envs gitfs", 2,
        "envs takes key=value arguments (backend), got 'gitfs'"),
    row("fileserver-timeout-zero", "fileserver -c {ws}/stopped.master update -t 0", 2,
        "argument --timeout/-t: '0' must be a number above 0"),
    row("git-pillar-master-stopped", "git_pillar -c {ws}/stopped.master update", 2,
        "the master is not running: nothing answers on"),
    row("master-config-missing", "master -c {ws}/nope.master", 2, "cannot read config file {ws}/nope.master"),
    row("minion-grains-yaml-error", "minion -c {ws}/daemon.conf", 2,
        "saltpan minion: {ws}/grains_bad.yaml:2: grains file is not valid YAML"),
]


def run(ws: Path, argv: tuple[str, ...]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "runtime", *[a.replace("{ws}", str(ws)) for a in argv]],
                          capture_output=True, text=True, cwd=ws, env=env, timeout=120, stdin=subprocess.DEVNULL,
                          check=False)


@pytest.mark.parametrize("case", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(ws: Path, case: Row) -> None:
    proc = run(ws, case.argv)
    shown = f"exit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    assert proc.returncode == case.code, shown
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, shown
    text = {"err": proc.stderr, "out": proc.stdout, "any": proc.stdout + proc.stderr}[case.where]
    for expected in case.says:
        assert expected.replace("{ws}", str(ws)) in text, shown
    for unexpected in case.not_says:
        assert unexpected not in proc.stdout + proc.stderr, shown
    if case.code == 2 and case.one_line:
        assert len(proc.stderr.strip().splitlines()) == 1, shown


def test_no_master_command_creates_anything(ws: Path) -> None:
    """key, jobs, event, minions and run read a master's files: without one they create none."""
    for argv in (("key", "-L"), ("jobs", "list"), ("event", "listen"), ("minions", "--status"),
                 ("run", "*", "test.ping")):
        assert run(ws, (argv[0], "-c", f"{ws}/never.master", *argv[1:])).returncode == 2
    assert not (ws / "never").exists()


def test_the_table_covers_every_command() -> None:
    commands = {r.argv[0] for r in ROWS if r.argv}
    assert {"compile", "call", "run", "key", "jobs", "event", "minions", "master", "minion", "swarm",
            "fileserver", "git_pillar", "completion"} <= commands
    assert len(ROWS) >= 40
