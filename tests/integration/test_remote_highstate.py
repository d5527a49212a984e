"""Issue 6: state.apply through the master: each minion compiles its highstate with files from
the master's file server (cached by hash) and fresh pillar, applies it and returns.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster

IDS = ["web01", "web02", "db01"]
OUTSIDE = "OUTSIDE-" + secrets.token_hex(8)

APP_SLS = """\
{% from 'map.jinja' import cfg with context %}
include:
  - app.static

app_dir:
  file.directory:
    - name: {{ grains['sandbox'] }}/app
    - makedirs: True

app_conf:
  file.managed:
    - name: {{ grains['sandbox'] }}/app/app.conf
    - source: salt://app/files/app.conf.j2
    - template: jinja
    - mode: '0640'
    - context:
        motd: {{ cfg.motd }}
    - require:
      - file: app_dir
"""

STATIC_SLS = """\
static_file:
  file.managed:
    - name: {{ grains['sandbox'] }}/app/static.bin
    - source: salt://app/files/static.bin
    - makedirs: True
"""

DB_SLS = """\
{% import_yaml 'db/defaults.yaml' as defaults %}
db_conf:
  file.managed:
    - name: {{ grains['sandbox'] }}/db.conf
    - source:
      - salt://db/missing.conf
      - salt://db/db.conf.j2
    - template: jinja
    - makedirs: True
    - defaults:
        engine: {{ defaults.engine }}
"""

TEMPLATE = "# managed\nmotd={{ motd }}\nport={{ pillar['app']['port'] }}\nos={{ grains['os'] }}\n"


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.stat().st_mtime if path.exists() else 0
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    stamp = max(old + 2, path.stat().st_mtime)
    os.utime(path, (stamp, stamp))


def build_trees(base: Path) -> None:
    pillar, states, outside = base / "pillar", base / "states", base / "outside"
    write(pillar / "top.sls", "base:\n  '*':\n    - app\n")
    write(pillar / "app.sls", "app:\n  port: {{ 8000 + grains['num'] }}\n")
    write(states / "top.sls", "base:\n  '*':\n    - app\n  'db01':\n    - db\n")
    write(states / "map.jinja", "{% set cfg = {'motd': 'welcome ' ~ grains['id']} %}\n")
    write(states / "app" / "init.sls", APP_SLS)
    write(states / "app" / "static.sls", STATIC_SLS)
    write(states / "app" / "files" / "app.conf.j2", TEMPLATE)
    write(states / "app" / "files" / "static.bin", bytes(range(256)) * 64)
    write(states / "db" / "init.sls", DB_SLS)
    write(states / "db" / "defaults.yaml", "engine: postgres\n")
    write(states / "db" / "db.conf.j2", "engine={{ engine }} id={{ grains['id'] }}\n")
    write(outside / "secret.txt", OUTSIDE + "\n")
    write(outside / "secret.yaml", f"secret: {OUTSIDE}\n")
    os.symlink(outside / "secret.txt", states / "leak.txt")
    os.symlink(outside, states / "leakdir")
    write(states / "hello.txt", "hello\n")
    escapes = {
        "dotdot": "salt://../outside/secret.txt",
        "absolute": "salt:///etc/hostname",
        "symlink": "salt://leak.txt",
        "symlinkdir": "salt://leakdir/secret.txt",
        "backslash": "salt://app\\..\\..\\outside\\secret.txt",
        "saltenv": "salt://secret.txt?saltenv=..",
        "saltenv_path": "salt://secret.txt?saltenv=../outside",
    }
    lines = []
    for name, url in escapes.items():
        lines += [f"escape_{name}:", "  file.managed:", f"    - name: {{{{ grains['sandbox'] }}}}/escape_{name}",
                  f"    - source: {json.dumps(url)}", "    - makedirs: True", ""]
    lines += ["inside:", "  file.managed:", "    - name: {{ grains['sandbox'] }}/inside",
              "    - source: salt://hello.txt", "    - makedirs: True", ""]
    write(states / "escapes.sls", "\n".join(lines))
    write(states / "jinja_escape.sls", "{% import_yaml '../outside/secret.yaml' as s %}\nx:\n  test.nop:\n"
                                       "    - name: {{ s.secret }}\n")
    write(states / "jinja_symlink.sls", "{% include 'leakdir/secret.yaml' %}\nx:\n  test.nop: []\n")
    write(states / "fails.sls", "{% if grains['id'] == 'web02' %}boom:\n  test.fail_without_changes: []\n"
                                "{% else %}fine:\n  test.succeed_without_changes: []\n{% endif %}\n")


@pytest.fixture(scope="module")
def hcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("highstate")
    build_trees(base)
    cl = Cluster(base, master_opts={"worker_threads": 3})
    for num, minion_id in enumerate(IDS):
        cl.add_minion(minion_id, {"num": num, "os": "Debian"})
    with cl.running():
        yield cl


def sandbox(cl: Cluster, minion_id: str) -> Path:
    return cl.base / f"sandbox-{minion_id}"


def cached(cl: Cluster, minion_id: str, rel: str) -> Path:
    return cl.base / minion_id / "var/cache/saltpan/minion/files/base" / rel


def apply(cl: Cluster, *args: str, tgt: str = "*") -> dict:
    return cl.run_json(tgt, "state.apply", *args, "--timeout", "60", timeout=120)


def by_id(results: dict) -> dict[str, dict]:
    return {key.split("_|-")[1]: ret for key, ret in results.items()}


def test_highstate_on_three_minions(hcluster: Cluster) -> None:
    cl = hcluster
    data = apply(cl)
    assert set(data) == set(IDS)
    for num, minion_id in enumerate(IDS):
        results = by_id(data[minion_id])
        expected = {"app_dir", "app_conf", "static_file"} | ({"db_conf"} if minion_id == "db01" else set())
        assert set(results) == expected, results
        assert all(r["result"] is True for r in results.values()), results
        # app.static is included, so it runs first and its makedirs creates the app dir
        assert results["app_conf"]["changes"] and results["static_file"]["changes"], results
        assert results["static_file"]["__run_num__"] < results["app_dir"]["__run_num__"]
        box = sandbox(cl, minion_id)
        assert (box / "app" / "app.conf").read_text() == \
            f"# managed\nmotd=welcome {minion_id}\nport={8000 + num}\nos=Debian\n"
        assert (box / "app" / "app.conf").stat().st_mode & 0o777 == 0o640
        assert (box / "app" / "static.bin").read_bytes() == bytes(range(256)) * 64
    assert (sandbox(cl, "db01") / "db.conf").read_text() == "engine=postgres id=db01\n"
    assert not (sandbox(cl, "web01") / "db.conf").exists()

    again = apply(cl)
    for minion_id in IDS:
        assert all(r["result"] is True and not r["changes"] for r in again[minion_id].values()), again[minion_id]


def test_state_sls_and_pillar_change_reach_the_run(hcluster: Cluster) -> None:
    cl = hcluster
    write(cl.base / "pillar" / "app.sls", "app:\n  port: {{ 9000 + grains['num'] }}\n")
    try:
        ret = by_id(apply(cl, "app", tgt="web01")["web01"])
        assert ret["app_conf"]["changes"], ret
        assert "port=9000" in (sandbox(cl, "web01") / "app" / "app.conf").read_text()
    finally:
        write(cl.base / "pillar" / "app.sls", "app:\n  port: {{ 8000 + grains['num'] }}\n")
    ret = by_id(apply(cl, "app", tgt="web01")["web01"])
    assert "port=8000" in (sandbox(cl, "web01") / "app" / "app.conf").read_text()


def test_test_mode_changes_nothing(hcluster: Cluster) -> None:
    cl = hcluster
    apply(cl)
    template = cl.base / "states" / "app" / "files" / "app.conf.j2"
    write(template, TEMPLATE + "extra=1\n")
    (sandbox(cl, "web02") / "app" / "static.bin").unlink()
    before = {m: (sandbox(cl, m) / "app" / "app.conf").stat() for m in IDS}
    try:
        data = apply(cl, "test=True")
        for minion_id in IDS:
            results = by_id(data[minion_id])
            assert results["app_conf"]["result"] is None, results["app_conf"]
            assert "extra=1" in json.dumps(results["app_conf"]["changes"])
            conf = sandbox(cl, minion_id) / "app" / "app.conf"
            assert "extra" not in conf.read_text()
            assert conf.stat().st_mtime_ns == before[minion_id].st_mtime_ns
            assert conf.stat().st_ino == before[minion_id].st_ino
        assert by_id(data["web02"])["static_file"]["result"] is None
        assert not (sandbox(cl, "web02") / "app" / "static.bin").exists()
        # The real run then makes exactly those changes.
        real = apply(cl)
        assert by_id(real["web02"])["static_file"]["changes"]
        assert all("extra=1" in (sandbox(cl, m) / "app" / "app.conf").read_text() for m in IDS)
    finally:
        write(template, TEMPLATE)
    apply(cl)


def test_changed_file_is_fetched_again_unchanged_comes_from_cache(hcluster: Cluster) -> None:
    cl = hcluster
    apply(cl, tgt="web01")
    static = cached(cl, "web01", "app/files/static.bin")
    template = cached(cl, "web01", "app/files/app.conf.j2")
    assert static.read_bytes() == bytes(range(256)) * 64
    st_static, st_template = static.stat(), template.stat()

    write(cl.base / "states" / "app" / "files" / "app.conf.j2", TEMPLATE.replace("# managed", "# managed v2"))
    try:
        ret = by_id(apply(cl, tgt="web01")["web01"])
        assert ret["app_conf"]["changes"] and not ret["static_file"]["changes"]
        assert "# managed v2" in template.read_text()
        assert template.stat().st_ino != st_template.st_ino  # downloaded again (hash changed)
        now = static.stat()
        assert (now.st_ino, now.st_mtime_ns) == (st_static.st_ino, st_static.st_mtime_ns)  # served from cache
        # A corrupted cache entry does not match the master's hash: fetched again, never used.
        static.write_bytes(b"tampered")
        ret = by_id(apply(cl, tgt="web01")["web01"])
        assert not ret["static_file"]["changes"], ret["static_file"]
        assert static.read_bytes() == bytes(range(256)) * 64
        assert (sandbox(cl, "web01") / "app" / "static.bin").read_bytes() == bytes(range(256)) * 64
    finally:
        write(cl.base / "states" / "app" / "files" / "app.conf.j2", TEMPLATE)


def test_state_sources_outside_the_roots_are_refused(hcluster: Cluster) -> None:
    cl = hcluster
    data = apply(cl, "escapes", tgt="web01")["web01"]
    assert OUTSIDE not in json.dumps(data)
    results = by_id(data)
    assert results["inside"]["result"] is True
    for sid, ret in results.items():
        if sid == "inside":
            continue
        assert ret["result"] is False, (sid, ret)
        assert "Traceback" not in ret["comment"] and ret["comment"].startswith("Unable to manage file: Source "), ret
        assert not (sandbox(cl, "web01") / sid).exists()
    assert not any(OUTSIDE in p.read_text(errors="replace") for p in (cl.base / "web01").rglob("*") if p.is_file())


@pytest.mark.parametrize("sls", ["jinja_escape", "jinja_symlink"])
def test_jinja_imports_outside_the_roots_are_refused(hcluster: Cluster, sls: str) -> None:
    cl = hcluster
    data = apply(cl, sls, tgt="web01")["web01"]
    assert isinstance(data, list), data  # a compile error, nothing applied
    assert OUTSIDE not in json.dumps(data)


def test_cli_highstate_output_and_fleet_summary(hcluster: Cluster) -> None:
    cl = hcluster
    proc = cl.run("*", "state.apply", "--timeout", "60", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for minion_id in IDS:
        assert f"{minion_id}:\n" in out
        assert f"Summary for {minion_id}" in out
    assert out.count("          ID: app_conf") == 3
    assert "    Function: file.managed" in out
    assert "Succeeded: 4\n" in out and "Succeeded: 3\n" in out  # db01 has db_conf as well
    assert "Fleet summary: 3 minions returned, 3 without failures, 0 with failed states, 0 did not return" in out

    proc = cl.run("*", "state.apply", "fails", "--timeout", "60", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # as salt: a failed state is a non-zero retcode
    assert "Failed:    1" in proc.stdout and "          ID: boom" in proc.stdout
    assert "Fleet summary: 3 minions returned, 2 without failures, 1 with failed states, 0 did not return" in \
        proc.stdout

    proc = cl.run("web01", "state.apply", "jinja_escape", "--timeout", "60", timeout=120)
    assert proc.returncode == 1 and "Data failed to compile" in proc.stdout
