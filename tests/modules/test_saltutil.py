"""saltutil.* through saltpan call: custom modules synced from salt://_modules and salt://_states and
loaded as Salt loads them (runtime/modules/custom.py), and the refresh functions.

Captured from Salt 3008.3 (salt-call --local) with _modules/greet.py and _states/greeting.py:

    saltutil.sync_all   -> {tops: [], clouds: [], beacons: [], modules: [modules.greet],
                            states: [states.greeting], sdb: [], ... wrapper: []}; again -> all []
    greet.hello bob     -> "hello bob from <id>"
    state.single greeting.present x -> {greeting_|-x_|-x_|-present: {result: True, comment: ...}}
"""

from __future__ import annotations

from tests.modules.conftest import Minion

GREET = '''
"""A custom module, written for Salt's loader."""

__virtualname__ = "greet"
__func_alias__ = {"list_": "list"}


def __virtual__():
    return __virtualname__


def hello(name="world"):
    """Say hello."""
    __context__["calls"] = __context__.get("calls", 0) + 1
    return "hello " + name + " from " + __grains__["id"]


def os_family():
    return __salt__["grains.get"]("os_family")


def port():
    return __pillar__["app"]["port"]


def list_():
    return [__opts__["id"], __salt__["test.echo"]("x")]


def _private():
    return "never listed"
'''

GREETING = '''
def present(name, greeting="hello"):
    ret = {"name": name, "result": True, "changes": {}, "comment": ""}
    if __opts__["test"]:
        ret["result"] = None
        ret["comment"] = "would greet " + name
        return ret
    ret["comment"] = __salt__["greet.hello"](name)
    ret["changes"] = {"greeted": name, "sls": __low__.get("__sls__")}
    return ret
'''


def test_sync_then_call_custom_modules(minion: Minion) -> None:
    minion.write("states", "_modules/greet.py", GREET)
    minion.write("states", "_modules/windows_only.py", "def __virtual__():\n    return (False, 'not Windows')\n"
                                                       "def x():\n    return 1\n")
    minion.write("states", "_states/greeting.py", GREETING)
    synced = minion.call("saltutil.sync_all")
    assert synced["modules"] == ["modules.greet", "modules.windows_only"] and synced["states"] == ["states.greeting"]
    assert list(synced)[:5] == ["tops", "clouds", "beacons", "modules", "states"] and synced["grains"] == []
    assert minion.call("saltutil.sync_all")["modules"] == []                 # nothing changed since
    assert (minion.cachedir / "extmods" / "modules" / "greet.py").is_file()

    assert minion.call("greet.hello", "bob") == "hello bob from tester"
    assert minion.call("greet.os_family") == minion.call("grains.get", "os_family")
    assert minion.call("greet.list") == ["tester", "x"]                      # __func_alias__
    assert minion.call("greet.port") == 8080                                 # __pillar__
    assert "is not available" in minion.error("greet._private")
    assert "is not available" in minion.error("windows_only.x")            # __virtual__ said no
    functions = minion.call("sys.list_functions", "greet")
    assert functions == ["greet.hello", "greet.list", "greet.os_family", "greet.port"]
    assert "greet" in minion.call("sys.list_modules")
    assert minion.call("sys.doc", "greet.hello") == {"greet.hello": "Say hello."}
    assert "Passed invalid arguments to greet.hello" in minion.error("greet.hello", "a", "b")


def test_custom_states_in_state_runs(minion: Minion) -> None:
    minion.write("states", "_modules/greet.py", GREET)
    minion.write("states", "_states/greeting.py", GREETING)
    assert minion.call("saltutil.sync_modules") == ["modules.greet"]
    assert minion.call("saltutil.sync_states") == ["states.greeting"]
    assert minion.call("sys.list_state_functions", "greeting") == ["greeting.present"]
    assert "greeting" in minion.call("sys.list_state_modules")
    minion.write("states", "greet.sls", """\
        alice:
          greeting.present: []
        motd:
          file.managed:
            - name: {{ grains['sandbox'] }}/motd
            - contents: {{ salt['greet.hello']('template') }}
        """)
    ran = minion.call("state.apply", "greet")
    alice = ran["greeting_|-alice_|-alice_|-present"]
    assert alice["result"] is True and alice["comment"] == "hello alice from tester"
    assert alice["changes"] == {"greeted": "alice", "sls": "greet"}
    assert (minion.sandbox / "motd").read_text() == "hello template from tester\n"
    predicted = minion.call("state.single", "greeting.present", "bob", "test=True")
    (only,) = predicted.values()
    assert only["result"] is None and only["comment"] == "would greet bob"


def test_a_removed_or_broken_custom_module(minion: Minion) -> None:
    minion.write("states", "_modules/greet.py", GREET)
    assert minion.call("saltutil.sync_modules") == ["modules.greet"]
    (minion.states / "_modules" / "greet.py").unlink()
    minion.write("states", "_modules/broken.py", "def f(:\n")
    assert minion.call("saltutil.sync_modules") == ["modules.broken"]
    assert not (minion.cachedir / "extmods" / "modules" / "greet.py").exists()   # gone from the file server
    assert "is not available" in minion.error("greet.hello")
    assert minion.call("test.ping") is True                                      # the broken one harms nothing
    assert minion.call("saltutil.refresh_modules") is True


def test_refresh_and_jobs_masterless(minion: Minion) -> None:
    assert minion.call("saltutil.refresh_pillar") is True
    assert minion.call("saltutil.refresh_grains") is True
    assert minion.call("saltutil.running") == []
    assert minion.call("saltutil.find_job", "20260101000000000001") == {}
    assert minion.call("saltutil.kill_job", "20260101000000000001") is None
