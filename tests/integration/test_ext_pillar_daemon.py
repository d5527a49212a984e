"""Issue 8 through a real master: a driver that hangs or raises for one minion costs that
minion one ``_errors`` entry, while the master keeps serving every other minion on time.

The custom driver ``inventory`` (``<extension_modules>/pillar/inventory.py``) hangs for
``slow01`` (far longer than ``ext_pillar_timeout``), raises for ``boom01`` and answers for
everybody else.  The master runs two MWorkers, so a worker stuck in a driver would show up as
a late answer for ``web01``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.integration.cluster import Cluster

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

IDS = ["web01", "slow01", "boom01"]
TIMEOUT = 1.0
HANG = 20  # seconds: longer than every wait below, short enough that the thread ends during the module

DRIVER = f"""\
import time

def ext_pillar(minion_id, pillar, site='ams1'):
    if minion_id == 'slow01':
        time.sleep({HANG})
        return {{'inventory': 'too late'}}
    if minion_id == 'boom01':
        raise RuntimeError('CMDB row for boom01 is corrupt')
    return {{'inventory': {{'host': minion_id, 'site': site}}}}
"""

TIMEOUT_ERROR = (f"Failed to load ext_pillar inventory for minion slow01: no answer within {TIMEOUT:g} s "
                 "(ext_pillar_timeout); the call was abandoned and its data ignored")
RAISE_ERROR = "Failed to load ext_pillar inventory for minion boom01: RuntimeError: CMDB row for boom01 is corrupt"


@pytest.fixture(scope="module")
def ecluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("ext-daemon")
    (base / "pillar").mkdir()
    (base / "pillar" / "top.sls").write_text("base:\n  '*':\n    - common\n")
    (base / "pillar" / "common.sls").write_text("motd: hello {{ grains['id'] }}\n")
    (base / "states").mkdir()
    (base / "states" / "top.sls").write_text("base:\n  '*':\n    - motd\n")
    (base / "states" / "motd.sls").write_text(
        "motd:\n  test.succeed_without_changes:\n    - name: {{ pillar.get('motd') }}\n")
    (base / "ext" / "pillar").mkdir(parents=True)
    (base / "ext" / "pillar" / "inventory.py").write_text(DRIVER)
    cl = Cluster(base, master_opts={"extension_modules": str(base / "ext"),
                                    "ext_pillar": [{"inventory": {"site": "fra2"}}],
                                    "ext_pillar_timeout": TIMEOUT})
    for minion_id in IDS:
        cl.add_minion(minion_id, request_timeout=15.0)
    with cl.running():
        yield cl


def test_failing_drivers_cost_one_error_and_the_rest_compiles(ecluster: Cluster) -> None:
    items = ecluster.run_json("*", "pillar.items", "--timeout", "20", timeout=60)
    assert items["web01"] == {"motd": "hello web01", "inventory": {"host": "web01", "site": "fra2"}}
    assert items["slow01"] == {"motd": "hello slow01", "_errors": [TIMEOUT_ERROR]}
    assert items["boom01"] == {"motd": "hello boom01", "_errors": [RAISE_ERROR]}
    # The error is the driver's, logged by the master once per failure with the minion named.
    assert "slow01" in ecluster.master.log() and "ext_pillar_timeout" in ecluster.master.log()


def test_a_hung_driver_does_not_delay_other_minions(ecluster: Cluster) -> None:
    workers_before = ecluster.master_children()
    answers: dict[str, tuple[float, dict]] = {}

    def ask(minion_id: str) -> None:
        start = time.monotonic()
        ret = ecluster.run_json(minion_id, "pillar.items", "--timeout", "20", timeout=60)
        answers[minion_id] = (time.monotonic() - start, ret)

    # Keep slow01's compiles hanging in the workers while web01 asks, several times over.
    slow = [threading.Thread(target=ask, args=("slow01",)) for _ in range(2)]
    for thread in slow:
        thread.start()
    time.sleep(0.3)
    web_times = []
    for _ in range(3):
        ask("web01")
        elapsed, ret = answers["web01"]
        assert ret["web01"]["inventory"] == {"host": "web01", "site": "fra2"}
        web_times.append(elapsed)
    for thread in slow:
        thread.join(60)
    elapsed, ret = answers["slow01"]
    assert isinstance(ret["slow01"], dict), ret
    assert ret["slow01"]["_errors"] == [TIMEOUT_ERROR]
    # slow01 waits about ext_pillar_timeout; web01 never waits for it (CLI start-up included).
    assert max(web_times) < TIMEOUT + 1.5, web_times
    assert elapsed < TIMEOUT + 3.0
    # No worker died or was restarted, and every minion still answers.
    assert ecluster.master_children() == workers_before
    assert ecluster.run_json("*", "test.ping", "--timeout", "10") == dict.fromkeys(IDS, True)


def test_state_runs_on_other_minions_are_not_held_up(ecluster: Cluster) -> None:
    """A highstate compiles fresh pillar on every run: web01's is not held up by slow01's."""
    start = time.monotonic()
    out = ecluster.run_json("-L", "web01,slow01", "state.apply", "--timeout", "20", timeout=60)
    assert time.monotonic() - start < TIMEOUT + 3.0
    ok = out["web01"]["test_|-motd_|-hello web01_|-succeed_without_changes"]
    assert ok["result"] is True and ok["changes"] == {}
    # As in Salt, a minion whose pillar has errors runs no state: it gets the errors instead.
    assert out["slow01"] == ["Pillar failed to render with the following messages:", TIMEOUT_ERROR]
