"""The message classes of runtime/protocol/: the command table, docs/protocol.md and the master's
handlers all agree with them; every message survives a round trip; bad fields are refused with
the reason the master answers with."""

from __future__ import annotations

import importlib.util
import inspect
import os
import pkgutil
from typing import Any

import pytest

from runtime import codec, protocol
from runtime.master.worker import HANDLER_CLASSES

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")


def all_subclasses(base: type) -> set[type]:
    out: set[type] = set()
    todo = [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                todo.append(sub)
    return out


def defined_in_protocol(cls: type) -> bool:
    return cls.__module__.startswith("runtime.protocol")


def concrete_requests() -> set[type]:
    # importing every module of the package first, so that a class nobody imports is seen too
    for info in pkgutil.iter_modules(protocol.__path__):
        importlib.import_module(f"runtime.protocol.{info.name}")
    return {cls for cls in all_subclasses(protocol.Request) if defined_in_protocol(cls) and "COMMAND" in vars(cls)}


# ---------------------------------------------------------------- one table, derived from the classes

def test_every_message_class_is_in_the_command_table() -> None:
    requests = concrete_requests()
    assert requests == set(protocol.REQUESTS), (
        f"request classes missing from protocol.REQUESTS: {sorted(c.__name__ for c in requests - set(protocol.REQUESTS))}")
    assert len({r.COMMAND for r in protocol.REQUESTS}) == len(protocol.REQUESTS), "two classes share a command"
    assert dict(protocol.COMMANDS) == {r.COMMAND: r for r in protocol.REQUESTS}
    assert set(protocol.CLEAR_COMMANDS) | set(protocol.SESSION_COMMANDS) == set(protocol.COMMANDS)
    for request in protocol.REQUESTS:
        assert isinstance(request.CLASS, protocol.MessageClass), request
        assert issubclass(request.REPLY, protocol.Reply), request
        assert (request.CLASS is protocol.MessageClass.SESSION) == issubclass(request, protocol.SessionRequest)


def test_every_reply_class_answers_a_request() -> None:
    replies = {cls for cls in all_subclasses(protocol.Reply) if defined_in_protocol(cls)}
    answered = {r.REPLY for r in protocol.REQUESTS} | {protocol.ErrorReply}
    assert replies == answered, f"reply classes of no request: {sorted(c.__name__ for c in replies - answered)}"


def test_every_handler_has_a_message_class_and_every_message_class_a_handler() -> None:
    handled: dict[type, str] = {}
    for cls in HANDLER_CLASSES:
        for request, name in cls.HANDLES.items():
            assert request not in handled, f"{request.__name__} has two handlers"
            handled[request] = f"{cls.__name__}.{name}"
    assert set(handled) <= set(protocol.REQUESTS), (
        f"handlers for commands without a message class: {sorted(v for k, v in handled.items() if k not in protocol.REQUESTS)}")
    assert set(protocol.REQUESTS) <= set(handled), (
        f"message classes without a handler: {sorted(r.COMMAND for r in protocol.REQUESTS if r not in handled)}")


def load_gen_protocol() -> Any:
    spec = importlib.util.spec_from_file_location("gen_protocol", os.path.join(DOCS, "gen_protocol.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_protocol_md_agrees_with_the_classes() -> None:
    gen = load_gen_protocol()
    with open(gen.PROTOCOL_MD, encoding="utf-8") as fh:
        current = fh.read()
    assert current == gen.render(current), "docs/protocol.md is stale: run `python docs/gen_protocol.py`"
    assert gen.main(["--check"]) == 0
    for request in protocol.REQUESTS:
        assert f"| `{request.COMMAND}` | `{request.__name__}` |" in current


def test_a_changed_message_makes_the_docs_check_fail(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    gen = load_gen_protocol()
    monkeypatch.setattr(protocol.Heartbeat, "NOTES", "something else")
    assert gen.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err


# ---------------------------------------------------------------- round trips

PROOF = protocol.ClientProof(user="alice", ts=1, nonce=b"n" * 16, mac=b"m" * 32)
EXAMPLES: dict[type, list[protocol.Message]] = {
    protocol.AuthHello: [],   # built by the handshake: see test_auth_hello_round_trip
    protocol.AuthReply: [protocol.AuthReply(v=1, outcome="accepted", reason="", minion_id="web1", nonce=b"n" * 32,
                                            hello_hash=b"h" * 32, master_pub=b"k" * 32, now=5, sid=b"s" * 16,
                                            eph=b"e" * 32, sealed=b"x", sig=b"g" * 64),
                         protocol.AuthReply(v=1, outcome="pending", reason="", minion_id="web1", nonce=b"n" * 32,
                                            hello_hash=b"h" * 32, master_pub=b"k" * 32, now=5, sid=None, eph=None,
                                            sealed=None, sig=b"g" * 64)],
    protocol.Publish: [protocol.Publish(body=b"\x80", proof=PROOF)],
    protocol.PublishReply: [protocol.PublishReply(jid="20260101000000000001", minions=["web1"])],
    protocol.JobReturns: [protocol.JobReturns(body=b"\x80", proof=PROOF)],
    protocol.JobReturnsReply: [protocol.JobReturnsReply(jid="1", minions=["a"], returns={"a": {"return": True}})],
    protocol.FileserverUpdate: [protocol.FileserverUpdate(body=b"\x80", proof=PROOF)],
    protocol.FileserverUpdateReply: [
        protocol.FileserverUpdateReply(changed=False, backends=["roots"], remotes=()),
        protocol.FileserverUpdateReply(changed=True, backends=["gitfs"], remotes=(
            protocol.RemoteUpdate(backend="gitfs", remote="https://git.example.com/s.git", ok=True, changed=True,
                                  notes=["branch 'dev' was force-pushed"]),
            protocol.RemoteUpdate(backend="gitfs", remote="git://127.0.0.1:1/x.git", ok=False, changed=False,
                                  error="fetch failed")))],
    protocol.Heartbeat: [protocol.Heartbeat(epoch=3), protocol.Heartbeat(epoch=None)],
    protocol.HeartbeatReply: [protocol.HeartbeatReply(now=1, heartbeat=5.0, epoch=2, publish_key=b"k" * 32),
                              protocol.HeartbeatReply(now=1, heartbeat=0.5, epoch=2, publish_key=None)],
    protocol.PublishKeyRequest: [protocol.PublishKeyRequest()],
    protocol.PublishKeyReply: [protocol.PublishKeyReply(epoch=4, publish_key=b"k" * 32)],
    protocol.JobReturn: [protocol.JobReturn(jid="1", fun="test.ping", fun_args=[], ret=True, retcode=0, success=True),
                         protocol.JobReturn(jid="1", fun=None, fun_args=["x"], ret={"a": [1]}, retcode=2,
                                            success=True, out="highstate")],
    protocol.Ok: [protocol.Ok()],
    protocol.PillarRequest: [protocol.PillarRequest(grains={"os": "Debian"}, saltenv="base", pillarenv=None,
                                                    clean_cache=True),
                             protocol.PillarRequest(grains=None, saltenv=None, pillarenv="dev")],
    protocol.PillarReply: [protocol.PillarReply(pillar={"a": {"b": 1}})],
    protocol.GrainsUpload: [protocol.GrainsUpload(grains={"os": "Debian"})],
    protocol.MineStore: [protocol.MineStore(data={"network.ip_addrs": ["10.0.0.1"]}),
                         protocol.MineStore(data={}, clear=True)],
    protocol.MineGet: [protocol.MineGet(tgt="roles:web", fun="network.ip_addrs", tgt_type="grain"),
                       protocol.MineGet(tgt=["a", "b"], fun=["x.y", "z.w"], tgt_type="list")],
    protocol.MineData: [protocol.MineData(data={"web1": ["10.0.0.1"]})],
    protocol.MineDelete: [protocol.MineDelete(fun="network.ip_addrs")],
    protocol.MineFlush: [protocol.MineFlush()],
    protocol.MinionEvents: [protocol.MinionEvents(events=(protocol.MinionEvent(tag="x/y", data={"a": 1}),))],
    protocol.EventsReply: [protocol.EventsReply(ok=True, fired=1)],
    protocol.FileEnvs: [protocol.FileEnvs()],
    protocol.FileEnvsReply: [protocol.FileEnvsReply(envs=["base", "dev"])],
    protocol.FileList: [protocol.FileList(saltenv="base", prefix="sub/")],
    protocol.FileListReply: [protocol.FileListReply(files=["a.sls"])],
    protocol.DirList: [protocol.DirList(saltenv=None, prefix="")],
    protocol.DirListReply: [protocol.DirListReply(dirs=["sub"])],
    protocol.FileFind: [protocol.FileFind(path="a.sls", saltenv="base")],
    protocol.FileFindReply: [protocol.FileFindReply(), protocol.FileFindReply(
        path="a.sls", saltenv="base", hsum="ab", hash_type="sha256", size=3, mode=0o644)],
    protocol.FileHash: [protocol.FileHash(path="a.sls", saltenv=None)],
    protocol.FileHashReply: [protocol.FileHashReply(), protocol.FileHashReply(hsum="ab", hash_type="sha256")],
    protocol.ServeFile: [protocol.ServeFile(path="a.sls", saltenv="base", loc=1024)],
    protocol.FileChunk: [protocol.FileChunk(), protocol.FileChunk(data=b"x", dest="a.sls", loc=1, done=True, hsum="ab",
                                                                   hash_type="sha256", mode=0o644, size=1)],
    protocol.ErrorReply: [protocol.ErrorReply(reason="unknown_command", message="unknown command")],
    protocol.ClientProof: [PROOF],
    protocol.PublishJob: [protocol.PublishJob(tgt=["a", "b"], fun="test.ping", arg=[1], kwarg={"k": "v"},
                                              tgt_type="list", ret="", timeout=7)],
    protocol.JobQuery: [protocol.JobQuery(jid="20260101000000000001")],
    protocol.MinionEvent: [protocol.MinionEvent(tag="t", data={})],
    protocol.UpdateQuery: [protocol.UpdateQuery(backends=["gitfs"], remotes=["*states*"]),
                           protocol.UpdateQuery(backends=[], remotes=[])],
    protocol.RemoteUpdate: [protocol.RemoteUpdate(backend="git_pillar", remote="file:///srv/p.git", ok=True,
                                                  changed=False)],
}


def test_every_message_has_round_trip_examples() -> None:
    messages = {cls for cls in all_subclasses(protocol.Message) if defined_in_protocol(cls)
                and cls not in (protocol.Request, protocol.Reply, protocol.SessionRequest)}
    assert messages == set(EXAMPLES), f"add examples for {sorted(c.__name__ for c in messages - set(EXAMPLES))}"


@pytest.mark.parametrize("message", [m for ms in EXAMPLES.values() for m in ms], ids=lambda m: type(m).__name__)
def test_round_trip_through_msgpack(message: protocol.Message) -> None:
    wire = codec.unpack(codec.pack(message.to_wire()))
    assert type(message).from_wire(wire) == message
    if isinstance(message, protocol.Request):
        assert next(iter(wire)) == "cmd" and wire["cmd"] == message.COMMAND


def test_auth_hello_round_trip() -> None:
    from runtime.crypt.handshake import start_auth
    from runtime.crypt.identity import Identity

    load = start_auth(Identity.generate(), "web1").load
    hello = protocol.AuthHello.from_wire(load)
    assert hello.to_wire() == load and hello.minion_id == "web1"
    assert protocol.parse_clear_request(codec.unpack_envelope(protocol.encode_clear(hello)).load) == hello


def test_replies_are_read_by_the_request() -> None:
    reply = protocol.Heartbeat(epoch=1).read_reply({"now": 1, "heartbeat": 2, "epoch": 3, "publish_key": None})
    assert reply == protocol.HeartbeatReply(now=1, heartbeat=2.0, epoch=3, publish_key=None)
    with pytest.raises(protocol.ProtocolError):
        protocol.PillarRequest(grains=None, saltenv=None, pillarenv=None).read_reply({"pillar": [1]})


def test_session_requests_do_not_travel_clear() -> None:
    with pytest.raises(ValueError):
        protocol.encode_clear(protocol.Heartbeat(epoch=1))


# ---------------------------------------------------------------- refusals

REFUSED: list[tuple[str, Any, str]] = [
    # (what, payload, reason)
    ("not a map", ["_pillar"], "unknown_command"),
    ("command not a string", {"cmd": 7}, "unknown_command"),
    ("a clear command, sealed", {"cmd": "publish"}, "unknown_command"),
    ("a method name", {"cmd": "handle_aes"}, "unknown_command"),
    ("another minion's id", {"cmd": "_pillar", "id": "db01"}, "id_mismatch"),
    ("an id that is not a string", {"cmd": "_grains", "id": ["web1"], "grains": {}}, "id_mismatch"),
    ("grains not a map", {"cmd": "_grains", "grains": [1]}, "bad_grains"),
    ("pillar grains not a map", {"cmd": "_pillar", "grains": "x"}, "bad_grains"),
    ("saltenv not a string", {"cmd": "_pillar", "saltenv": 1}, "malformed"),
    ("clean_cache not a bool", {"cmd": "_pillar", "clean_cache": "yes"}, "malformed"),
    ("too many events", {"cmd": "_minion_event", "events": [{"tag": "a"}] * 101}, "bad_event"),
    ("events not a list", {"cmd": "_minion_event", "events": {"tag": "a"}}, "bad_event"),
    ("jid not a string", {"cmd": "_return", "jid": 5}, "unknown_job"),
    ("retcode not an int", {"cmd": "_return", "jid": "1", "retcode": "0"}, "malformed"),
    ("success not a bool", {"cmd": "_return", "jid": "1", "success": 1}, "malformed"),
    ("epoch not an int", {"cmd": "_heartbeat", "epoch": "1"}, "malformed"),
    ("path not a string", {"cmd": "_file_find", "path": ["a"], "saltenv": "base"}, "bad_path"),
    ("saltenv a map", {"cmd": "_file_list", "saltenv": {"base": 1}}, "bad_saltenv"),
    ("negative offset", {"cmd": "_serve_file", "path": "a", "saltenv": "base", "loc": -1}, "bad_path"),
    ("offset a string", {"cmd": "_serve_file", "path": "a", "saltenv": "base", "loc": "0"}, "bad_path"),
    ("mine data not a map", {"cmd": "_mine", "data": [1]}, "bad_mine"),
    ("mine data keyed by a number", {"cmd": "_mine", "data": {1: 2}}, "bad_mine"),
    ("mine get without fun", {"cmd": "_mine_get", "tgt": "*"}, "bad_mine"),
    ("mine get, a map as target", {"cmd": "_mine_get", "tgt": {"a": 1}, "fun": "x.y"}, "bad_mine"),
    ("mine get, unknown tgt_type", {"cmd": "_mine_get", "tgt": "*", "fun": "x.y", "tgt_type": "exec"}, "bad_mine"),
    ("mine get, too many functions", {"cmd": "_mine_get", "tgt": "*", "fun": ["f"] * 101}, "bad_mine"),
    ("mine delete, fun a list", {"cmd": "_mine_delete", "fun": ["a"]}, "bad_mine"),
]


@pytest.mark.parametrize(("what", "payload", "reason"), REFUSED, ids=[r[0] for r in REFUSED])
def test_session_request_refusals(what: str, payload: Any, reason: str) -> None:
    with pytest.raises(protocol.ProtocolError) as err:
        protocol.parse_session_request(payload, "web1")
    assert err.value.reason == reason, what


def test_lenient_where_salt_is() -> None:
    # the minion's own id, unknown extra fields, a prefix that cannot be used, malformed events skipped
    assert protocol.parse_session_request({"cmd": "_grains", "id": "web1", "grains": {}, "tok": "x"}, "web1") == \
        protocol.GrainsUpload(grains={})
    assert protocol.parse_session_request({"cmd": "_file_list", "saltenv": "base", "prefix": 5}, "web1") == \
        protocol.FileList(saltenv="base", prefix="")
    events = protocol.parse_session_request({"cmd": "_minion_event", "events": [{"tag": "a"}, 5, {"tag": 1},
                                                                                {"tag": "b", "data": []}]}, "web1")
    assert events == protocol.MinionEvents(events=(protocol.MinionEvent(tag="a", data={}),), skipped=3)
    pillar = protocol.parse_session_request({"cmd": "_pillar", "ext": {"file": "x"}, "pillar_override": {}}, "web1")
    assert isinstance(pillar, protocol.PillarRequest) and pillar.ignored == ("ext", "pillar_override")
    assert "ext" not in pillar.to_wire()


@pytest.mark.parametrize(("load", "reason"), [
    ({"cmd": "_auth"}, "malformed"),
    ({"cmd": "publish"}, "bad_proof"),
    ({"cmd": "publish", "body": b"", "proof": {"user": "root"}}, "bad_proof"),
    ({"cmd": "job_returns", "body": "text", "proof": {}}, "bad_proof"),
    ({"cmd": "_pillar"}, "unknown_command"),
    ({"cmd": b"publish"}, "unknown_command"),
])
def test_clear_request_refusals(load: dict[str, Any], reason: str) -> None:
    with pytest.raises(protocol.ProtocolError) as err:
        protocol.parse_clear_request(load)
    assert err.value.reason == reason


@pytest.mark.parametrize(("job", "reason"), [
    ({"fun": "test.ping,cmd.run", "tgt": "*"}, "bad_job"),
    ({"fun": "test.ping", "tgt": 5}, "bad_job"),
    ({"fun": "test.ping", "tgt": ["a", 1]}, "bad_job"),
    ({"fun": "test.ping", "tgt": "*", "arg": "x"}, "bad_job"),
    ({"fun": "test.ping", "tgt": "*", "timeout": "soon"}, "bad_job"),
    ({"fun": "test.ping", "tgt": "*", "timeout": -1}, "bad_job"),
    ({"fun": "test.ping", "tgt": "*", "ret": 5}, "bad_job"),
    ([1], "bad_job"),
])
def test_publish_job_refusals(job: Any, reason: str) -> None:
    with pytest.raises(protocol.ProtocolError) as err:
        protocol.PublishJob.decode(codec.pack(job))
    assert err.value.reason == reason


def test_publish_job_defaults_are_salts() -> None:
    job = protocol.PublishJob.decode(codec.pack({"fun": "test.ping", "tgt": "*"}))
    assert (job.tgt_type, job.arg, job.kwarg, job.ret, job.timeout) == ("glob", [], {}, "", 5)


def test_from_wire_is_the_only_constructor_needed_by_handlers() -> None:
    # every request class states its own from_wire (no class inherits another's checks by accident)
    for request in protocol.REQUESTS:
        assert "from_wire" in vars(request), request.__name__
        assert inspect.ismethod(request.from_wire)


def test_every_name_of_the_package_resolves_to_its_module() -> None:
    # runtime.protocol loads its modules on first use: its table of names must say where each lives
    import sys

    for name in protocol.__all__:
        value = getattr(protocol, name)
        home = protocol._HOMES.get(name, "base")
        assert getattr(sys.modules[f"runtime.protocol.{home}"], name) is value, name
    for cls in (*protocol.REQUESTS, *(r.REPLY for r in protocol.REQUESTS), *protocol.INNER_MESSAGES):
        assert cls.__name__ in protocol.__all__, f"{cls.__name__} is not exported by runtime.protocol"
