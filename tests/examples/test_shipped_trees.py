"""The shipped example trees (pillar_roots/, state_roots/, demo/fleet.yaml) against saltpan and real Salt.

The expected files in tests/examples/expected/ were generated with real
Salt 3008.3 (`salt-call --local pillar.raw` / `state.show_lowstate`, the
fleet's grains as minion config grains, the shipped trees as pillar_roots and
file_roots, the `frontends` nodegroup) by:

    python tests/examples/real_salt.py pillar web01 db02 --write
    python tests/examples/real_salt.py lowstate web01 db02 --write

Regenerate them the same way whenever the trees or the fleet change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import real_salt

from runtime import pipeline
from runtime.cli.compile_inputs import minion_grains
from runtime.cli.options import offline_config

REPO = real_salt.REPO
EXPECTED_DIR = real_salt.EXPECTED_DIR
FLEET = real_salt.load_fleet()
EXPECTED_MINIONS = ["web01", "db02"]
# every grain the trees read; a fleet entry without one would fail to render
REQUIRED_GRAINS = {"os", "os_family", "osrelease", "fqdn", "ipv4", "num_cpus", "mem_total", "role",
                   "datacenter", "sandbox"}


def expected(minion_id: str, what: str) -> Any:
    with open(os.path.join(EXPECTED_DIR, f"{minion_id}.{what}.json"), encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def shipped_opts() -> dict[str, Any]:
    return offline_config(None)


@pytest.fixture(scope="module")
def compiler(shipped_opts):
    return pipeline.pillar_compiler(shipped_opts)


def compile_pillar(opts: dict[str, Any], compiler, minion_id: str):
    grains = minion_grains(opts, minion_id, None)
    return compiler.compile(minion_id, grains)


def test_fleet_is_sandboxed_and_complete():
    assert 6 <= len(FLEET) <= 8
    for minion_id, grains in FLEET.items():
        missing = REQUIRED_GRAINS - set(grains)
        assert not missing, f"{minion_id} lacks grains {sorted(missing)}"
        assert grains["sandbox"] == f"/tmp/saltpan-demo/{minion_id}"


def test_shipped_config_points_at_the_trees(shipped_opts):
    assert shipped_opts["pillar_roots"] == {"base": [os.path.join(REPO, "pillar_roots")]}
    assert shipped_opts["file_roots"] == {"base": [os.path.join(REPO, "state_roots")]}
    assert shipped_opts["fleet_file"] == os.path.join(REPO, "demo", "fleet.yaml")
    assert shipped_opts["nodegroups"] == real_salt.NODEGROUPS


@pytest.mark.parametrize("minion_id", sorted(FLEET))
def test_every_fleet_minion_compiles_without_errors(shipped_opts, compiler, minion_id):
    result = compile_pillar(shipped_opts, compiler, minion_id)
    assert result.errors == []
    assert "_errors" not in result.pillar
    # what every minion gets from `common`
    for key in ("users", "os", "datacenter", "network", "site", "motd", "sshd"):
        assert key in result.pillar, f"{minion_id}: no {key}"
    assert result.pillar["datacenter"]["name"] == FLEET[minion_id]["datacenter"]


@pytest.mark.parametrize("minion_id", EXPECTED_MINIONS)
def test_pillar_equals_real_salt(shipped_opts, compiler, minion_id):
    result = compile_pillar(shipped_opts, compiler, minion_id)
    assert result.pillar == expected(minion_id, "pillar")


def test_targeting_styles_reach_the_right_minions(shipped_opts, compiler):
    """Each top-file target style selects exactly the minions it should."""
    pillars = {m: compile_pillar(shipped_opts, compiler, m).pillar for m in FLEET}
    has = {key: sorted(m for m, p in pillars.items() if key in p) for key in ("nginx", "haproxy", "tls",
                                                                             "redis", "prometheus")}
    assert has["nginx"] == ["web01", "web02"]                    # glob web*
    assert has["haproxy"] == ["lb01"]                            # compound G@role:lb or lb*
    assert has["tls"] == ["lb01", "web01", "web02"]              # nodegroup frontends
    assert has["redis"] == ["cache01"]                           # grain role:cache
    assert has["prometheus"] == ["mon01"]                        # glob mon*
    db = sorted(m for m, p in pillars.items() if "databases" in p.get("postgres", {}))
    assert db == ["db01", "db02"]                                # grain role:db
    replicas = sorted(m for m, p in pillars.items() if "replication" in p.get("postgres", {}))
    assert replicas == ["db02"]                                  # compound G@role:db and G@postgres_role:replica
    agents = sorted(m for m, p in pillars.items() if "monitoring" in p)
    assert agents == sorted(set(FLEET) - {"mon01"})              # compound * and not G@role:monitoring
    # include with key: the secrets file lands under postgres
    assert pillars["db01"]["postgres"]["password"].startswith("demo-only-")
    # include with key and defaults: the exporter fragment, rendered with port 9121
    assert pillars["cache01"]["monitoring"]["exporters"]["redis"] == {"listen": "10.10.3.31:9121", "scrape": True}


def test_cli_compiles_the_shipped_tree_by_default():
    proc = subprocess.run([sys.executable, "-m", "runtime", "compile", "--minion", "db02", "--out", "json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout) == expected("db02", "pillar")


@pytest.mark.parametrize("minion_id", EXPECTED_MINIONS)
def test_lowstate_equals_real_salt(minion_id):
    proc = subprocess.run([sys.executable, "-m", "runtime", "compile", "--minion", minion_id,
                           "--show", "lowstate", "--out", "json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == expected(minion_id, "lowstate")


def compile_lowstate(opts: dict[str, Any], compiler, minion_id: str) -> list[dict[str, Any]]:
    grains = minion_grains(opts, minion_id, None)
    pillar = compiler.compile(minion_id, grains)
    assert pillar.errors == []
    result = pipeline.compile_states(opts, minion_id, grains, pillar.pillar, "lowstate")
    assert result.errors == [], f"{minion_id}: {[str(e) for e in result.errors]}"
    return result.data


@pytest.mark.parametrize("minion_id", sorted(FLEET))
def test_every_state_stays_in_the_sandbox(shipped_opts, compiler, minion_id):
    """Every minion's states compile; each file a state manages, and each command, is under the sandbox grain."""
    sandbox = FLEET[minion_id]["sandbox"] + "/"
    low = compile_lowstate(shipped_opts, compiler, minion_id)
    assert len(low) >= 10, f"{minion_id} gets only {len(low)} states"
    for chunk in low:
        where = f"{minion_id}: {chunk['__id__']}"
        assert chunk["state"] in ("file", "cmd", "test"), f"{where}: {chunk['state']} may need root"
        if chunk["state"] == "file":
            assert chunk["name"].startswith(sandbox), where
            assert chunk.get("target", sandbox).startswith(sandbox), where
        if chunk["state"] == "cmd":
            assert sandbox in chunk["name"], where
            for key in ("creates", "unless"):
                if key in chunk:
                    assert sandbox in str(chunk[key]), where


# -- real Salt (skipped where there is no salt-call) -------------------------------------

SALT_CALL = real_salt.salt_call_path()
needs_salt = pytest.mark.skipif(SALT_CALL is None, reason="optional: no salt-call (set SALTPAN_SALT_CALL)")


@needs_salt
@pytest.mark.slow
@pytest.mark.parametrize("minion_id", sorted(FLEET))
def test_real_salt_agrees_on_every_minion(shipped_opts, compiler, minion_id):
    """Pillar and lowstate of each fleet minion, saltpan against salt-call --local."""
    salt_pillar, salt_low = real_salt.real_outputs(SALT_CALL, minion_id, FLEET[minion_id],
                                                   ["pillar.raw", "state.show_lowstate"])
    assert compile_pillar(shipped_opts, compiler, minion_id).pillar == salt_pillar
    assert compile_lowstate(shipped_opts, compiler, minion_id) == salt_low


@needs_salt
@pytest.mark.slow
@pytest.mark.parametrize("minion_id", ["web01", "db02", "lb01"])
def test_real_salt_applies_the_state_tree_cleanly_and_idempotently(minion_id):
    assert real_salt.check_minion(SALT_CALL, minion_id, FLEET[minion_id]) == []


@needs_salt
@pytest.mark.slow
@pytest.mark.parametrize("minion_id", ["web01", "db02", "lb01"])
def test_saltpan_applies_the_state_tree_as_real_salt_does(minion_id):
    """saltpan call --local state.apply: clean, idempotent, and the same files, modes and links as Salt."""
    assert real_salt.compare_apply(SALT_CALL, minion_id, FLEET[minion_id]) == []
