"""test.*, cmd.*, config.*, defaults.*, environ.*, log.*, dnsutil.*, git.*, alternatives.*, sys.* and
pkg.version_cmp through saltpan call (values as Salt 3008 gives them for the same input)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from runtime import modules
from tests.modules.conftest import Minion


def test_test_module(minion: Minion) -> None:
    assert minion.call("test.ping") is True
    assert minion.call("test.true") is True and minion.call("test.false") is False
    assert minion.call("test.echo", "hello") == "hello"
    assert minion.call("test.arg", 1, "two", "k=v") == {"args": [1, "two"], "kwargs": {"k": "v"}}
    assert minion.call("test.kwarg", "a=1", "b=[x]") == {"a": 1, "b": ["x"]}
    assert minion.call("test.version") == minion.call("test.versions")["saltpan"]
    assert set(minion.call("test.versions")) >= {"saltpan", "python", "jinja2", "pyzmq"}
    began = time.monotonic()
    assert minion.call("test.sleep", "0.2") is True
    assert time.monotonic() - began >= 0.2
    assert minion.call("test.retcode", 7, rc=1) is True          # the job's exit status, as salt-call


def test_cmd(minion: Minion) -> None:
    assert minion.call("cmd.run", "echo hello; echo oops >&2") == "hello\noops"
    assert minion.call("cmd.run_stdout", "echo out; echo err >&2") == "out"
    assert minion.call("cmd.run_stderr", "echo out; echo err >&2") == "err"
    ran = minion.call("cmd.run_all", "echo a; exit 3", rc=1)
    assert ran["retcode"] == 3 and ran["stdout"] == "a" and ran["pid"] > 0
    assert minion.call("cmd.shell", "echo $((2+3))") == "5"
    assert minion.call("cmd.retcode", "exit 4", rc=1) == 4
    assert minion.call("cmd.run", "pwd", f"cwd={minion.sandbox}") == str(minion.sandbox)
    assert minion.call("cmd.run", "echo $GREETING", "env={GREETING: hi}") == "hi"
    assert minion.call("cmd.which", "sh") == shutil.which("sh")
    assert minion.call("cmd.which", "no-such-program-xyz") is None
    assert minion.call("cmd.which_bin", "[no-such-program-xyz, sh]") == shutil.which("sh")
    assert minion.call("cmd.has_exec", "sh") is True and minion.call("cmd.has_exec", "no-such-xyz") is False


def test_config(minion: Minion) -> None:
    minion.opts.update({"custom.key": "from-opts", "backup_mode": "minion"})
    minion.write_conf()
    assert minion.call("config.get", "datacenter") == "ams1"                  # a grain
    assert minion.call("config.get", "app:port") == 8080                      # pillar
    assert minion.call("config.get", "custom.key") == "from-opts"
    assert minion.call("config.get", "nope", "dflt") == "dflt"
    assert minion.call("config.option", "custom.key") == "from-opts"
    assert minion.call("config.option", "mongo.port") == 27017                # Salt's module defaults
    assert minion.call("config.merge", "app") == {"port": 8080, "users": ["alice", "bob"]}
    assert minion.call("config.dot_vals", "custom") == {"custom.key": "from-opts"}
    assert minion.call("config.items")["id"] == "tester"
    assert minion.call("config.valid_fileproto", "salt://x") is True
    assert minion.call("config.valid_fileproto", "gopher://x") is False
    assert minion.call("config.backup_mode") == "minion"
    assert minion.call("config.backup_mode", "x") == "x"
    assert minion.call("config.manage_mode", "'0644'") == "0644"
    assert minion.call("config.manage_mode", "755") == "0755"


def test_defaults(minion: Minion) -> None:
    assert minion.call("defaults.merge", "{a: 1, b: {c: 2}}", "{b: {d: 3}}", "in_place=False") == {
        "a": 1, "b": {"c": 2, "d": 3}}
    assert minion.call("defaults.deepcopy", "{a: [1, 2]}") == {"a": [1, 2]}
    assert minion.call("defaults.update", "{web: {port: 81}}", "{port: 80, tls: false}", "in_place=False") == {
        "web": {"port": 81, "tls": False}}
    minion.write("states", "nginx/defaults.yaml", "nginx:\n  worker: 4\n  conf: {path: /etc/nginx}\n")
    assert minion.call("defaults.get", "nginx:nginx:conf:path") == "/etc/nginx"
    assert minion.call("defaults.get", "nginx:nginx:missing", "d") == "d"


def test_environ_log_dnsutil(minion: Minion) -> None:
    os.environ["SALTPAN_MODULE_TEST"] = "yes"
    try:
        assert minion.call("environ.get", "SALTPAN_MODULE_TEST") == "yes"
        assert minion.call("environ.get", "SALTPAN_NOT_SET_XYZ", "dflt") == "dflt"
        assert minion.call("environ.has_value", "SALTPAN_MODULE_TEST") is True
        assert minion.call("environ.has_value", "SALTPAN_MODULE_TEST", "no") is False
        assert minion.call("environ.items")["SALTPAN_MODULE_TEST"] == "yes"
    finally:
        del os.environ["SALTPAN_MODULE_TEST"]
    assert minion.call("log.debug", "a debug message") is True
    assert minion.call("log.info", "an info message") is True
    assert minion.call("log.error", "an error message") is True and "an error message" in minion.last_stderr
    assert minion.call("log.critical", "a critical message") is True and "a critical message" in minion.last_stderr
    assert minion.call("log.exception", "an exception message") is True
    assert "a warning message" in (minion.call("log.warning", "a warning message") and minion.last_stderr)
    assert minion.call("dnsutil.serial") == time.strftime("%Y%m%d01")
    minion.opts["grains"]["dnsserial_example.com"] = "2024010105"
    minion.write_conf()
    assert minion.call("dnsutil.serial", "example.com") == "2024010105"


@pytest.mark.skipif(shutil.which("git") is None, reason="optional: git is not installed")
def test_git(minion: Minion) -> None:
    repo = minion.sandbox / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["-c", "user.email=t@example.invalid", "-c", "user.name=t",
                                                "commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()
    assert minion.call("git.current_branch", repo) == "main"
    assert minion.call("git.revision", repo) == head
    assert head.startswith(minion.call("git.revision", repo, "short=True"))
    assert f"Path '{minion.sandbox}/none' is not a directory" in minion.error("git.revision", minion.sandbox / "none")


def test_alternatives_and_version_cmp(minion: Minion) -> None:
    links = sorted(os.listdir("/etc/alternatives")) if os.path.isdir("/etc/alternatives") else []
    if links:
        assert minion.call("alternatives.show_current", links[0]) == os.readlink(f"/etc/alternatives/{links[0]}")
    assert minion.call("alternatives.show_current", "no-such-alternative-xyz") is False
    minion.opts["grains"]["os_family"] = "Debian"
    minion.write_conf()
    assert minion.call("pkg.version_cmp", "1.0-1", "1.0-2") == -1
    assert minion.call("pkg.version_cmp", "2:1.0", "1:9.9") == 1
    assert minion.call("pkg.version_cmp", "1.0~rc1", "1.0") == -1
    assert minion.call("pkg.version_cmp", "1.2.3", "1.2.3") == 0


def test_sys(minion: Minion) -> None:
    listed = minion.call("sys.list_functions")
    assert listed == modules.list_functions()
    assert minion.call("sys.list_functions", "mine") == sorted(n for n in listed if n.startswith("mine."))
    assert minion.call("sys.list_functions", "pkg.*install*") == ["pkg.install"]
    assert minion.call("sys.list_modules") == sorted(modules.MODULES)
    assert minion.call("sys.doc", "test.ping") == {"test.ping": "Return True: the minion is up and answering."}
    assert minion.call("sys.argspec", "file.replace")["file.replace"]["args"][:3] == ["path", "pattern", "repl"]
    assert minion.call("sys.argspec", "test.arg") == {"test.arg": {"args": [], "defaults": None, "varargs": "args",
                                                                   "kwargs": "kwargs"}}
    assert "service.running" in minion.call("sys.list_state_functions", "service")
    assert {"file", "pkg", "service"} <= set(minion.call("sys.list_state_modules"))


def test_dnsutil_serial_update_stores_a_grain(minion: Minion) -> None:
    today = time.strftime("%Y%m%d01")
    assert minion.call("dnsutil.serial", "example.org", "update=True") == today
    assert minion.call("dnsutil.serial", "example.org") == today                    # read back from the grain
    assert minion.call("dnsutil.serial", "example.org", "update=True") == str(int(today) + 1)
