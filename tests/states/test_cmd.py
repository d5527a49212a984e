"""cmd.run / cmd.wait / cmd.script / cmd.mod_watch and runtime.cmdrun, with real processes."""

from __future__ import annotations

import os
import pwd
import tempfile
import time

import pytest
from statehelpers import manifest, read, write

from runtime import cmdrun
from runtime.states import cmd


def test_run_reports_salt_changes(ctx):
    ret = cmd.run(ctx, "echo out; echo err >&2; exit 0")
    assert ret["result"] is True
    assert set(ret["changes"]) == {"pid", "retcode", "stdout", "stderr"}
    assert (ret["changes"]["stdout"], ret["changes"]["stderr"], ret["changes"]["retcode"]) == ("out", "err", 0)
    assert ret["comment"] == 'Command "echo out; echo err >&2; exit 0" run'
    failed = cmd.run(ctx, "exit 3")
    assert failed["result"] is False and failed["changes"]["retcode"] == 3


def test_test_mode_runs_nothing(tctx, sandbox):
    marker = os.path.join(sandbox, "ran")
    ret = cmd.run(tctx, f"touch {marker}")
    assert ret == {"name": f"touch {marker}", "changes": {"cmd": f"touch {marker}"}, "result": None,
                   "comment": f'Command "touch {marker}" would have been executed'}
    assert not os.path.exists(marker)


def test_cwd_env_shell(ctx, sandbox):
    ret = cmd.run(ctx, "pwd; echo $FOO-$BAR", cwd=sandbox, env=[{"FOO": "a"}, {"BAR": 2}])
    assert ret["changes"]["stdout"] == f"{sandbox}\na-2"
    assert cmd.run(ctx, "echo $0", shell="/bin/bash")["changes"]["stdout"] == "/bin/bash"
    bad = cmd.run(ctx, "true", cwd=os.path.join(sandbox, "nope"))
    assert bad["result"] is False and "not available" in bad["comment"]
    assert cmd.run(ctx, "true", env="A=1")["result"] is False
    home = os.path.expanduser("~")
    assert cmd.run(ctx, "pwd")["changes"]["stdout"] == os.path.realpath(home)  # Salt: cwd defaults to home


def test_unless_onlyif_creates(ctx, sandbox):
    marker = write(os.path.join(sandbox, "marker"), "m")
    skip = cmd.run(ctx, f"touch {sandbox}/a", unless=f"test -f {marker}")
    assert skip["result"] is True and skip["changes"] == {} and skip["comment"] == "unless condition is true"
    assert not os.path.exists(f"{sandbox}/a")
    assert cmd.run(ctx, f"touch {sandbox}/b", onlyif=f"test -f {marker}")["changes"]["retcode"] == 0
    assert cmd.run(ctx, "echo x", onlyif=["true", "false"])["comment"] == "onlyif condition is false"
    assert cmd.run(ctx, "echo x", unless=["true", "false"])["changes"]["stdout"] == "x"  # one false: run
    assert cmd.run(ctx, "echo x", creates=marker)["comment"] == f"{marker} exists"
    assert cmd.run(ctx, "echo x", creates=[marker, f"{sandbox}/none"])["changes"]["stdout"] == "x"
    # the conditions run with the state's cwd
    assert cmd.run(ctx, "echo x", cwd=sandbox, unless="test -f marker")["changes"] == {}


def test_conditions_are_evaluated_in_test_mode(tctx, sandbox):
    assert cmd.run(tctx, "echo x", unless="true")["result"] is True
    assert cmd.run(tctx, "echo x", unless="false")["result"] is None


def test_runas_nobody(ctx):
    if os.geteuid() != 0:
        pytest.skip("runas needs root")
    with tempfile.TemporaryDirectory(dir="/tmp") as shared:  # pytest's tmp tree is 0700 root
        os.chmod(shared, 0o777)
        ret = cmd.run(ctx, f"id -un; echo $HOME; touch {shared}/by-nobody", runas="nobody", cwd=shared)
        assert ret["result"] is True, ret
        assert ret["changes"]["stdout"].splitlines() == ["nobody", pwd.getpwnam("nobody").pw_dir]
        assert os.stat(f"{shared}/by-nobody").st_uid == pwd.getpwnam("nobody").pw_uid
        denied = cmd.run(ctx, "touch /root/saltpan-must-not-exist", runas="nobody")
        assert denied["result"] is False and not os.path.exists("/root/saltpan-must-not-exist")
    missing = cmd.run(ctx, "true", runas="no_such_user_zz")
    assert missing["result"] is False and "no_such_user_zz" in missing["comment"]


def test_timeout_kills_the_process_group(ctx, sandbox):
    start = time.monotonic()
    ret = cmd.run(ctx, f"sleep 30 & echo $! > {sandbox}/child; sleep 30", timeout=0.5)
    assert time.monotonic() - start < 5
    assert ret["result"] is False
    assert ret["changes"]["retcode"] == 1
    assert ret["changes"]["stdout"].endswith("Timed out after 0.5 seconds")
    child = int(read(f"{sandbox}/child"))
    time.sleep(0.1)
    assert not os.path.exists(f"/proc/{child}") or "Z" in read(f"/proc/{child}/stat").split()[2]
    ignored = cmd.run(ctx, "sleep 5", timeout=0.3, ignore_timeout=True)
    assert ignored["result"] is True and ignored["changes"]["retcode"] == 0


def test_success_retcodes_and_stdout(ctx):
    assert cmd.run(ctx, "exit 2", success_retcodes=[2])["result"] is True
    assert cmd.run(ctx, "echo fine; exit 1", success_stdout="fine")["result"] is True


def test_stateful(ctx):
    ret = cmd.run(ctx, "echo line1; echo 'changed=yes comment=\"hi there\"'", stateful=True)
    assert ret["comment"] == "hi there"
    assert ret["changes"]["changed"] == "yes" and ret["changes"]["stdout"] == "line1"
    quiet = cmd.run(ctx, "echo changed=no", stateful=True)
    assert quiet["changes"] == {} and quiet["result"] is True
    as_json = cmd.run(ctx, """echo '{"changed": true, "comment": "j", "extra": 1}'""", stateful=True)
    assert as_json["comment"] == "j" and as_json["changes"]["extra"] == 1


def test_wait_and_mod_watch(ctx, tctx, sandbox):
    target = f"{sandbox}/waited"
    assert cmd.wait(ctx, f"touch {target}") == {"name": f"touch {target}", "changes": {}, "result": True,
                                                  "comment": ""}
    assert not os.path.exists(target)
    fired = cmd.mod_watch(ctx, f"touch {target}", sfun="wait")
    assert fired["result"] is True and fired["changes"]["retcode"] == 0 and os.path.exists(target)
    # mod_watch re-evaluates unless/onlyif like Salt 3008
    skipped = cmd.mod_watch(ctx, "echo again", sfun="run", unless=f"test -f {target}")
    assert skipped["changes"] == {} and skipped["comment"] == "unless condition is true"
    assert cmd.mod_watch(tctx, "echo x", sfun="run")["changes"] == {"cmd": "echo x"}
    assert cmd.mod_watch(ctx, "echo x", sfun="call")["result"] is False


def test_script(make_ctx, roots, sandbox):
    write(os.path.join(roots, "scripts", "hello.sh"), "#!/bin/sh\necho hello {{ who }} \"$1\"\n")
    ctx = make_ctx()
    ret = cmd.script(ctx, "salt://scripts/hello.sh arg1", template="jinja", context={"who": "world"})
    assert ret["result"] is True, ret
    assert ret["changes"]["stdout"] == "hello world arg1"
    before = manifest(sandbox)
    predicted = cmd.script(make_ctx(test=True), "salt://scripts/hello.sh")
    assert predicted["result"] is None and manifest(sandbox) == before
    missing = cmd.script(ctx, "salt://scripts/none.sh")
    assert missing["result"] is False and "Unable to cache script" in missing["comment"]


# --------------------------------------------------------------------------- cmdrun


def test_cmdrun_list_argv_and_stdin():
    res = cmdrun.run(["cat"], stdin="piped")
    assert (res.retcode, res.stdout) == (0, "piped")
    assert res.as_dict().keys() == {"pid", "retcode", "stdout", "stderr"}


def test_evaluate_conditions_shapes(sandbox):
    assert cmdrun.evaluate_conditions({"name": "x"}) is None
    out = cmdrun.evaluate_conditions({"onlyif": "true", "unless": "true"})
    assert out.skip and out.skip_watch and out.comment == "onlyif condition is true\nunless condition is true"
    functions = {"file.file_exists": lambda path: os.path.exists(path)}
    yes = cmdrun.evaluate_conditions({"onlyif": [{"fun": "file.file_exists", "args": [sandbox]}]},
                                     functions=functions)
    assert yes.skip is False
    no = cmdrun.evaluate_conditions({"unless": [{"fun": "file.file_exists", "path": sandbox}]}, functions=functions)
    assert no.skip is True
    bad = cmdrun.evaluate_conditions({"onlyif": 5})
    assert bad.skip is False and "bad type" in bad.comment
