"""Fuzzing the message decoder and the request dispatcher (hypothesis).

Targets:

* ``codec.unpack`` / ``codec.unpack_envelope`` with arbitrary bytes and arbitrary msgpack: only
  ``DecodeError`` may come out, and what decodes re-encodes to the same value;
* ``Worker.handle`` (an in-process MWorker with a real key store, session store, job cache,
  file roots and pillar roots) with arbitrary bytes, arbitrary envelopes, clear loads of every
  command with arbitrary fields (hellos with one field replaced, publish/job_returns with a
  valid client proof over an arbitrary body) and sealed loads of every command with arbitrary
  payloads, sealed under a real session.

Each reply must be a well-formed envelope: a clear load with ``error: {reason, message}`` or a
known success shape, or a sealed reply that opens under the session.  ``internal_error`` (an
unexpected exception caught by the worker) is a failure: it means a handler crashed.

Runs for ``SALTPAN_FUZZ_SECONDS`` (default 12 s, split between the targets) in ``make test``;
set it higher by hand, e.g. ``SALTPAN_FUZZ_SECONDS=600 .venv/bin/python -m pytest -q
tests/security/test_fuzz.py``.  A failure prints the falsifying example.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import codec, protocol, transport
from runtime.crypt.channel import ClientChannel
from runtime.crypt.clientkey import client_key_path, load_or_create_client_key, make_proof
from runtime.crypt.errors import CryptoError, RemoteRefusal
from runtime.crypt.handshake import finish_auth, start_auth
from runtime.crypt.identity import Identity
from runtime.events import EVENT_PULL
from runtime.master import worker as worker_mod
from runtime.master.handlers.context import current_user as _current_user
from runtime.master.worker import HANDLER_CLASSES, Worker
from tests.integration.rogue import AcceptAll

BUDGET = float(os.environ.get("SALTPAN_FUZZ_SECONDS", "12"))
SETTINGS = settings(max_examples=150, deadline=None, database=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))


def run_for(seconds: float, test: Callable[[], None]) -> int:
    """Run a @given test (each call a fresh hypothesis run) until ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    rounds = 0
    while True:
        test()
        rounds += 1
        if time.monotonic() >= deadline:
            return rounds


# ---------------------------------------------------------------- strategies

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 63), max_value=2 ** 64 - 1),
                    st.floats(allow_nan=False), st.text(max_size=40), st.binary(max_size=64))
keys = st.one_of(st.text(max_size=12), st.binary(max_size=8), st.integers(min_value=-1000, max_value=1000))
values = st.recursive(scalars, lambda children: st.one_of(st.lists(children, max_size=6),
                                                          st.dictionaries(keys, children, max_size=6)),
                      max_leaves=30)
NAMES = sorted({*protocol.COMMANDS, *(n for cls in HANDLER_CLASSES for n in (*cls.HANDLES.values(),
                                                                              *cls.NON_HANDLERS)),
                "__init__", "__class__", "_prep_auth_info", "_send_pub", "close"})
cmds = st.one_of(st.sampled_from(NAMES), scalars)
PATHS = ["hello.txt", "salt://hello.txt", "../secret", "/etc/passwd", "sub/../../x", "a\\..\\b", "", "\x00"]
field_values = st.one_of(values, st.sampled_from(PATHS), st.sampled_from(["base", "..", "dev", "*"]),
                         st.sampled_from(["20990101000000000001", "web01", "fuzz01", "salt/job/1/new"]))
loads = st.builds(lambda cmd, extra: {"cmd": cmd, **extra}, cmds,
                  st.dictionaries(st.sampled_from(["id", "jid", "path", "saltenv", "prefix", "loc", "events",
                                                   "grains", "pillarenv", "epoch", "return", "fun", "tag",
                                                   "data", "body", "proof", "success", "retcode", "x"]),
                                  field_values, max_size=6))
# each command with the fields its handler reads, values plausible or arbitrary
texts = st.text(max_size=20)
events = st.lists(st.one_of(st.fixed_dictionaries({"tag": st.one_of(texts, st.sampled_from(["salt/job/1/new",
                                                                                           "custom/x"])),
                                                  "data": st.one_of(st.dictionaries(texts, values, max_size=4),
                                                                    values)}),
                            values), max_size=5)
grains = st.one_of(st.dictionaries(st.one_of(texts, st.just("id")), values, max_size=8), values)
COMMAND_FIELDS: dict[str, dict[str, Any]] = {
    "_heartbeat": {"epoch": st.one_of(st.integers(-2, 5), values)},
    "_publish_key": {},
    "_return": {"jid": field_values, "fun": st.one_of(st.just("test.ping"), values), "fun_args": values,
                "return": values, "retcode": values, "success": values, "out": values},
    "_pillar": {"grains": grains, "saltenv": field_values, "pillarenv": field_values, "id": field_values},
    "_grains": {"grains": grains},
    "_minion_event": {"events": st.one_of(events, values)},
    "_file_envs": {},
    "_file_list": {"saltenv": field_values, "prefix": field_values},
    "_dir_list": {"saltenv": field_values, "prefix": field_values},
    "_file_find": {"path": field_values, "saltenv": field_values},
    "_file_hash": {"path": field_values, "saltenv": field_values},
    "_serve_file": {"path": field_values, "saltenv": field_values, "loc": st.one_of(st.integers(-5, 10), values)},
}
command_loads = st.one_of(*[st.fixed_dictionaries({"cmd": st.just(cmd)}, optional=fields)
                            for cmd, fields in COMMAND_FIELDS.items()])
jobs = st.fixed_dictionaries({}, optional={
    "fun": st.one_of(st.sampled_from(["test.ping", "test.echo", "cmd.run", "test.ping,cmd.run", "x"]), scalars),
    "tgt": st.one_of(st.sampled_from(["*", "fuzz01", "web* or fuzz01", "G@os:x", "( bad", ""]), values),
    "tgt_type": st.one_of(st.sampled_from(["glob", "list", "compound", "pcre", "grain", "nodegroup", "bogus"]),
                          scalars),
    "arg": values, "kwarg": values, "jid": field_values, "timeout": scalars})


# ---------------------------------------------------------------- the worker under test

class Harness:
    """An MWorker in this process, with sinks bound for its publications and events."""

    def __init__(self, base: Path):
        self.base = base
        sock_dir = tempfile.mkdtemp(prefix="spfz-", dir="/tmp")
        roots = base / "states"
        (roots / "sub").mkdir(parents=True)
        (roots / "hello.txt").write_text("hello\n")
        (base / "pillar").mkdir()
        (base / "pillar" / "top.sls").write_text("base:\n  '*':\n    - common\n")
        (base / "pillar" / "common.sls").write_text("common: {{ grains.get('os', 'x') }}\n")
        self.sock_dir = sock_dir
        self.opts: dict[str, Any] = {
            "sock_dir": sock_dir, "pki_dir": str(base / "pki"), "cachedir": str(base / "cache"),
            "file_roots": {"base": [str(roots)]}, "pillar_roots": {"base": [str(base / "pillar")]},
            "auto_accept": True, "max_pending_keys": 50, "refusal_log_interval": 3600, "id": "master",
        }
        self.ctx = zmq.Context()
        self.sinks = []
        for name in (worker_mod.PUBLISH_PULL, EVENT_PULL):
            sink = transport.make_socket(self.ctx, zmq.PULL)
            transport.bind(sink, transport.ipc_address(sock_dir, name))
            self.sinks.append(sink)
        self.stop = threading.Event()
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()
        self.worker = Worker(self.opts, Identity.generate(), self.ctx)
        self.client_key = load_or_create_client_key(client_key_path(self.opts["cachedir"], _current_user()))
        self.user = _current_user()
        self.minion = Identity.generate()
        self.channel = self.new_session()

    def _drain(self) -> None:
        poller = zmq.Poller()
        for sink in self.sinks:
            poller.register(sink, zmq.POLLIN)
        while not self.stop.is_set():
            for sock, _ in poller.poll(50):
                sock.recv_multipart()

    def new_session(self) -> ClientChannel:
        attempt = start_auth(self.minion, "fuzz01")
        reply = self.worker.handle("127.0.0.1", codec.pack_envelope(codec.ENC_CLEAR, attempt.load))
        result = finish_auth(attempt, codec.unpack_envelope(reply).load, AcceptAll())
        assert result.outcome == "accepted", result
        return ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)

    def handle(self, body: bytes) -> bytes:
        reply = self.worker.handle("127.0.0.1", body)
        assert isinstance(reply, bytes)
        return reply

    def close(self) -> None:
        self.worker.close()
        self.stop.set()
        self.drain.join(2)
        for sink in self.sinks:
            sink.close(linger=0)
        self.ctx.term()
        shutil.rmtree(self.sock_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    h = Harness(tmp_path_factory.mktemp("fuzz"))
    yield h
    h.close()


def check_clear(reply: bytes) -> dict:
    """A well-formed clear reply; a refusal names a reason (never internal_error)."""
    envelope = codec.unpack_envelope(reply)
    assert envelope.enc == codec.ENC_CLEAR, envelope
    load = envelope.load
    if "error" in load:
        err = load["error"]
        assert set(load) == {"error"} and isinstance(err, dict) and set(err) == {"reason", "message"}, load
        assert isinstance(err["reason"], str) and isinstance(err["message"], str), load
        assert err["reason"] != "internal_error", load
        assert err["reason"] in protocol.ERRORS, load
    else:
        assert ("outcome" in load and "sig" in load) or {"jid", "minions"} <= set(load) \
            or {"changed", "backends", "remotes"} == set(load), load
    return load


def check_sealed(harness: Harness, counter: int, reply: bytes) -> Any:
    try:
        payload = harness.channel.open_reply(counter, reply)
    except RemoteRefusal as exc:   # a clear refusal of the sealed request (session, replay ...)
        assert exc.reason != "internal_error", exc
        assert exc.reason in protocol.ERRORS, exc
        return None
    if isinstance(payload, dict) and "error" in payload:
        assert payload["error"]["reason"] != "internal_error", payload
        assert payload["error"]["reason"] in protocol.ERRORS, payload
    return payload


# ---------------------------------------------------------------- the decoder

def test_fuzz_decoder() -> None:
    @SETTINGS
    @given(st.one_of(st.binary(max_size=512), values.map(lambda v: msgpack.packb(v, use_bin_type=True))))
    def decode(data: bytes) -> None:
        for limits in (codec.DEFAULT_LIMITS, codec.HEADER_LIMITS, codec.Limits(max_size=64, max_items=4,
                                                                                   max_depth=3)):
            try:
                value = codec.unpack(data, limits)
            except codec.DecodeError as exc:
                assert exc.reason in codec.DECODE_REASONS
                continue
            assert codec.unpack(codec.pack(value), limits) == value
        try:
            codec.unpack_envelope(data)
        except codec.DecodeError as exc:
            assert exc.reason in codec.DECODE_REASONS
        # the request proxy's classification never fails, and never grants a class the workers'
        # decoding does not: anything it cannot vouch for is charged as a hello
        kind = protocol.classify(data)
        if kind is not protocol.UNKNOWN_CLASS:
            try:
                envelope = protocol.read_envelope(data)
            except codec.DecodeError:
                assert kind is protocol.MessageClass.SESSION   # sealed-looking bytes the workers refuse
            else:
                assert kind is protocol.envelope_class(envelope)

    run_for(BUDGET * 0.15, decode)


# ---------------------------------------------------------------- the dispatcher

def test_fuzz_dispatcher_with_bytes_and_envelopes(harness: Harness) -> None:
    envelopes = st.builds(lambda enc, load: codec.pack({"enc": enc, "load": load}),
                          st.one_of(st.sampled_from(["clear", "aes"]), scalars), st.one_of(loads, values))

    @SETTINGS
    @given(st.one_of(st.binary(max_size=512), envelopes,
                     values.map(lambda v: msgpack.packb(v, use_bin_type=True))))
    def dispatch(body: bytes) -> None:
        check_clear(harness.handle(body))

    run_for(BUDGET * 0.2, dispatch)


def test_fuzz_dispatcher_with_clear_commands(harness: Harness) -> None:
    def hello(field: str, value: Any) -> bytes:
        load = dict(start_auth(Identity.generate(), "fuzz-hello").load)
        load[field] = value
        return codec.pack_envelope(codec.ENC_CLEAR, load)

    def client(cmd: str, job: Any, raw_body: bytes | None) -> bytes:
        body = raw_body if raw_body is not None else codec.pack(job)
        proof = make_proof(harness.client_key, harness.user, body)
        return codec.pack_envelope(codec.ENC_CLEAR, {"cmd": cmd, "body": body, "proof": proof})

    bodies = st.one_of(
        loads.map(lambda load: codec.pack_envelope(codec.ENC_CLEAR, load)),
        st.builds(hello, st.sampled_from(["v", "id", "pub", "eph", "nonce", "ts", "sig", "extra"]), field_values),
        st.builds(client, st.sampled_from(["publish", "job_returns", "fileserver_update"]), st.one_of(jobs, values),
                  st.one_of(st.none(), st.binary(max_size=64))),
    )

    @SETTINGS
    @given(bodies)
    def dispatch(body: bytes) -> None:
        check_clear(harness.handle(body))

    run_for(BUDGET * 0.3, dispatch)


def test_fuzz_dispatcher_with_sealed_commands(harness: Harness) -> None:
    payloads = st.one_of(command_loads, command_loads, command_loads, loads, values)
    tampered = st.sampled_from(["h", "ct", "both", "none"])

    @SETTINGS
    @given(payloads, tampered, st.binary(min_size=1, max_size=16))
    def dispatch(payload: Any, tamper: str, junk: bytes) -> None:
        try:
            counter, body = harness.channel.seal_request(payload)
        except (codec.EncodeError, CryptoError):
            return
        if tamper != "none":
            load = codec.unpack_envelope(body).load
            for key in ("h", "ct") if tamper == "both" else (tamper,):
                load[key] = load[key][: len(load[key]) // 2] + junk
            check_clear(harness.handle(codec.pack_envelope(codec.ENC_AES, load)))
            return
        reply = harness.handle(body)
        if codec.unpack_envelope(reply).enc == codec.ENC_CLEAR:
            load = check_clear(reply)
            if load.get("error", {}).get("reason") == "unknown_session":
                harness.channel = harness.new_session()   # a fuzzed load may not end the session
            return
        check_sealed(harness, counter, reply)

    run_for(BUDGET * 0.35, dispatch)
