"""Floods against a master's request port, and what legit traffic sees meanwhile.

The floods (SECURITY.md class 9, CVE-2023-20897's family; issue 16 items 3 and 9):

* ``auth``: hellos of new minion ids, each correctly signed by its own fresh key (so every one
  costs the master a signature check, a nonce claim and a key-store decision; the ids fill the
  pending set up to ``max_pending_keys``, the rest are refused ``pending_full``);
* ``malformed``: frames the proxy must drop (wrong frame counts, bad request ids) and bodies
  the decoder must refuse (not msgpack, too deep, huge declared lengths, ext types, bad keys);
* ``session``: an accepted minion's sealed ``_pillar`` requests, pipelined (A1);
* ``chunks``: an accepted minion's ``_serve_file`` requests whose replies it never reads (A1);
* ``publish``: ``publish`` requests with proofs that do not verify, some claiming the master's
  own user (junk publishes).

Each flood runs in separate processes (as attackers would: the measuring process keeps its
own CPU), from several loopback source addresses (so that per-peer rate limits do not stop it
alone), sending without waiting for replies.  Meanwhile the caller's ``ping`` runs in a loop;
the report gives its latency percentiles and the master's memory (RSS of the master and every
child process, summed) before, at peak and after.  Used by tests/security/test_floods.py
(short floods) and bench/security_floods.py (60 s floods).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgpack
import zmq

from runtime import codec
from tests.security.probe import HonestProbe, ProbeResult

SOURCES = [f"127.0.0.{100 + i}" for i in range(4)]


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total


# ---------------------------------------------------------------- what the attackers send

def malformed_messages() -> list[list[bytes]]:
    """Frame lists for a DEALER (its empty delimiter included where a well-framed one has it)."""
    rid = b"R" * 8
    deep = b"\x91" * 5000 + b"\xc0"
    bodies = [
        b"\xc1\xc1 not msgpack",
        codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "_auth"})[:-3],
        msgpack.packb({"enc": "clear", "load": {"x": None}})[:5] + deep,
        b"\xdd\xff\xff\xff\xff",                         # array32 announcing 4 G items
        b"\xdf\xff\xff\xff\xff",                         # map32 announcing 4 G pairs
        b"\xdb\xff\xff\xff\xff" + b"a" * 16,             # str32 announcing 4 GiB
        b"\x82\xa3enc\xa5clear\xa4load\xd4\x01\x00",    # ext type
        b"\x82\xa3enc\xa5clear\xa4load\x81\xcb" + b"\x00" * 8 + b"\x01",  # float map key
        msgpack.packb({"enc": "aes", "load": {"h": b"x" * 40, "ct": b"y" * 200}}),
        msgpack.packb({"enc": "clear", "load": {"cmd": "__init__"}}),
        os.urandom(512),
    ]
    messages = [[b"", rid, body] for body in bodies]
    messages += [
        [b"", b"short", bodies[0]],                      # rid not 8 bytes
        [rid, bodies[0]],                                # no delimiter
        [b"", rid, bodies[0], b"extra"],                 # one frame too many
        [b""] + [b"x"] * 40,                             # forty frames
        [os.urandom(64)],
    ]
    return messages


# ---------------------------------------------------------------- the attacker processes

@dataclass(frozen=True)
class Credentials:
    """What an attacker process needs to act as an accepted minion (A1), or as a local user
    whose proofs do not verify (junk publishes)."""

    minion_id: str = ""
    pem: bytes = b""             # the minion's private key (PEM)
    user: str = ""               # the user junk publishes claim (the master's own, to hit its lane)
    big_file: str = ""           # a file of several MiB in file_roots (unread file chunks)


class _Session:
    """An attacker's own session as an accepted minion (re-made when the master drops it)."""

    def __init__(self, sock: zmq.Socket, creds: Credentials) -> None:
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        from runtime.crypt.identity import Identity

        self.sock = sock
        self.creds = creds
        self.identity = Identity.from_private(load_pem_private_key(creds.pem, None))  # type: ignore[arg-type]
        self.channel: Any = None
        self.auth()

    def auth(self) -> None:
        from runtime.crypt.channel import ClientChannel
        from runtime.crypt.handshake import finish_auth, start_auth
        from tests.integration.rogue import AcceptAll

        for _ in range(20):
            attempt = start_auth(self.identity, self.creds.minion_id)
            rid = os.urandom(8)
            self.sock.send_multipart([b"", rid, codec.pack_envelope(codec.ENC_CLEAR, attempt.load)])
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if not self.sock.poll(200, zmq.POLLIN):
                    continue
                frames = self.sock.recv_multipart()
                if frames[1] != rid:
                    continue
                result = finish_auth(attempt, codec.unpack_envelope(frames[2]).load, AcceptAll())
                if result.outcome == "accepted":
                    self.channel = ClientChannel(result.session, clock_offset_ms=result.clock_offset_ms)
                    return
                break
            time.sleep(0.5)
        raise RuntimeError(f"the flood's minion {self.creds.minion_id} could not authenticate")

    def sealed(self, payload: dict[str, Any]) -> bytes:
        return self.channel.seal_request(payload)[1]


def _flood_process(kind: str, port: int, seconds: float, source: str, tag: str, rate: float, out: Any,
                   creds: Credentials | None = None) -> None:
    """One attacker: sends ``kind`` messages from ``source`` at up to ``rate`` a second.

    * ``auth``: hellos, each for a new id with a fresh signature;
    * ``malformed``: :func:`malformed_messages`;
    * ``session``: sealed ``_pillar`` requests (and some ``_file_hash``) of an accepted minion,
      pipelined without waiting for replies (the independent suite sent 40,000);
    * ``chunks``: ``_serve_file`` requests for a large file over four connections whose replies
      are never read (receive buffers of a few KiB, a receive high-water mark of one message);
    * ``publish``: ``publish`` requests whose proofs do not verify, claiming ``creds.user``.
    """
    from runtime.crypt.identity import Identity

    keys = [Identity.generate() for _ in range(16)] if kind == "auth" else []
    messages = malformed_messages()
    ctx = zmq.Context()
    socks = []
    for _ in range(4 if kind == "chunks" else 1):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100_000)
        if kind == "chunks":          # a peer that does not read: libzmq stops reading TCP at once
            sock.setsockopt(zmq.RCVHWM, 1)
            sock.setsockopt(zmq.RCVBUF, 4096)
        else:
            sock.setsockopt(zmq.RCVHWM, 100_000)
        sock.connect(f"tcp://{source}:0;127.0.0.1:{port}")
        socks.append(sock)
    session = _Session(socks[0], creds) if kind in ("session", "chunks") and creds is not None else None
    sent = 0
    replies: Counter[str] = Counter()
    started = time.monotonic()
    deadline = started + seconds
    try:
        while (now := time.monotonic()) < deadline:
            if sent > (now - started) * rate:
                time.sleep(0.002)
            else:
                sock = socks[sent % len(socks)]
                frames = _attack_frames(kind, sent, tag, keys, messages, session, creds)
                try:
                    sock.send_multipart(frames, zmq.NOBLOCK)
                    sent += 1
                except zmq.Again:
                    time.sleep(0.001)
            if kind != "chunks":
                while socks[0].poll(0, zmq.POLLIN):
                    kind_of = _reply_kind(socks[0].recv_multipart())
                    replies[kind_of] += 1
                    if kind_of == "unknown_session" and session is not None and replies[kind_of] % 50 == 1:
                        session.auth()
        end = time.monotonic() + 1.0
        while kind != "chunks" and time.monotonic() < end and socks[0].poll(100, zmq.POLLIN):
            replies[_reply_kind(socks[0].recv_multipart())] += 1
    finally:
        for sock in socks:
            sock.close(linger=0)
        ctx.term()
    out.put({"sent": sent, "replies": dict(replies)})


def _attack_frames(kind: str, n: int, tag: str, keys: list[Any], messages: list[list[bytes]],
                   session: _Session | None, creds: Credentials | None) -> list[bytes]:
    from runtime.crypt.handshake import start_auth

    rid = os.urandom(8)
    if kind == "auth":
        hello = start_auth(keys[n % len(keys)], f"flood-{tag}-{n}").load
        return [b"", rid, codec.pack_envelope(codec.ENC_CLEAR, hello)]
    if kind == "session" and session is not None:
        payload = {"cmd": "_file_hash", "path": "hello.txt"} if n % 10 == 9 else {"cmd": "_pillar"}
        return [b"", rid, session.sealed(payload)]
    if kind == "chunks" and session is not None and creds is not None:
        loc = (n % 4) * 1024 * 1024
        return [b"", rid, session.sealed({"cmd": "_serve_file", "path": creds.big_file, "loc": loc})]
    if kind == "publish":
        user = creds.user if creds is not None and n % 2 else f"nouser{n % 97}"
        body = codec.pack({"fun": "test.ping", "tgt": "*", "arg": [], "kwarg": {}})
        proof = {"user": user, "ts": int(time.time() * 1000), "nonce": os.urandom(16), "mac": os.urandom(32)}
        return [b"", rid, codec.pack_envelope(codec.ENC_CLEAR, {"cmd": "publish", "body": body, "proof": proof})]
    return messages[n % len(messages)]


def _reply_kind(frames: list[bytes]) -> str:
    try:
        load = codec.unpack_envelope(frames[-1]).load
    except (codec.DecodeError, IndexError):
        return "unreadable"
    if isinstance(load.get("error"), dict):
        return str(load["error"].get("reason"))
    if load.get("outcome") == "refused":
        return str(load.get("reason"))
    return str(load.get("outcome") or "other")


# ---------------------------------------------------------------- measuring

@dataclass
class FloodReport:
    kind: str
    seconds: float
    sent: int = 0
    replies: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    rss_after_kib: int = 0
    probe: ProbeResult | None = None

    @property
    def rss_growth_mib(self) -> float:
        return (max(self.rss_peak_kib, self.rss_after_kib) - self.rss_before_kib) / 1024

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    def summary(self) -> str:
        return (f"{self.kind} flood {self.seconds:.0f} s: {self.sent} messages sent, replies {dict(self.replies)}; "
                f"{len(self.latencies)} pings, p50 {self.percentile(50):.3f} s, p99 {self.percentile(99):.3f} s, "
                f"max {max(self.latencies, default=float('nan')):.3f} s, {len(self.failures)} failed; master RSS "
                f"{self.rss_before_kib // 1024} -> peak {self.rss_peak_kib // 1024} MiB "
                f"(growth {self.rss_growth_mib:.1f} MiB)" + (f"; {self.probe.summary()}" if self.probe else ""))

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("nan")


RATES = {"auth": 2000.0, "malformed": 5000.0, "session": 8000.0, "chunks": 2000.0, "publish": 5000.0}


def run_flood(kind: str, port: int, seconds: float, ping: Callable[[], tuple[bool, float, str]],
              master_pids: Callable[[], list[int]], ping_interval: float = 0.2, rate: float | None = None,
              sources: list[str] | None = None, creds: Credentials | None = None,
              probe: HonestProbe | None = None) -> FloodReport:
    """Flood ``port`` for ``seconds`` while calling ``ping()`` -> (ok, seconds, detail) in a loop
    and, with ``probe``, while an honest minion times each of its requests."""
    report = FloodReport(kind, seconds)
    report.rss_before_kib = rss_kib(master_pids())
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    tag = os.urandom(3).hex()
    sources = sources or SOURCES
    rate = rate or RATES[kind] / len(sources)   # a second, per source
    procs = [ctx.Process(target=_flood_process, args=(kind, port, seconds, source, f"{tag}{i}", rate, out, creds),
                         daemon=True) for i, source in enumerate(sources)]
    stop = threading.Event()

    def sample_memory() -> None:
        while not stop.wait(0.5):
            report.rss_peak_kib = max(report.rss_peak_kib, rss_kib(master_pids()))

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    for proc in procs:
        proc.start()
    try:
        time.sleep(0.5)   # attackers start up
        if probe is not None:
            probe.start()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and any(p.is_alive() for p in procs):
            ok, took, detail = ping()
            report.latencies.append(took)
            if not ok:
                report.failures.append(detail)
            time.sleep(ping_interval)
        for _ in procs:
            try:
                result = out.get(timeout=seconds + 60)
            except Exception:  # noqa: BLE001 - a dead attacker reports nothing
                continue
            report.sent += result["sent"]
            report.replies.update(result["replies"])
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        stop.set()
        sampler.join(2)
        if probe is not None:
            report.probe = probe.stop()
    time.sleep(1.0)
    report.rss_after_kib = rss_kib(master_pids())
    report.rss_peak_kib = max(report.rss_peak_kib, report.rss_after_kib)
    return report
