"""Attacker-side clients: raw ZeroMQ peers, raw TCP peers, and a forger of client proofs.

``RawClient`` is a DEALER on the master's request port that sends whatever frames it is given
(optionally from another loopback source address, so that per-peer rate limits see a
different peer).  It records every reply through the ``record`` callback, so the attack guard
can look for canaries in everything the master answered.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

import zmq

from runtime import codec
from runtime.crypt.clientkey import make_proof


class RawClient:
    def __init__(self, ret_port: int, *, source: str | None = None,
                 record: Callable[[str, Any], Any] | None = None):
        self.ctx = zmq.Context()
        self.port = ret_port
        self.source = source
        self.record = record or (lambda where, obj: obj)
        self.sock = self._connect()

    def _connect(self) -> zmq.Socket:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100_000)
        sock.setsockopt(zmq.SNDTIMEO, 2000)
        prefix = f"{self.source}:0;" if self.source else ""
        sock.connect(f"tcp://{prefix}127.0.0.1:{self.port}")
        return sock

    def reconnect(self) -> None:
        self.sock.close(linger=0)
        self.sock = self._connect()

    def send(self, frames: list[bytes]) -> None:
        self.sock.send_multipart(frames)

    def recv(self, wait: float = 3.0) -> list[bytes] | None:
        if not self.sock.poll(int(wait * 1000), zmq.POLLIN):
            return None
        frames = self.sock.recv_multipart()
        self.record("reply frames", frames)
        return frames

    def exchange(self, frames: list[bytes], wait: float = 3.0) -> list[bytes] | None:
        """Send frames; the reply frames, or None when nothing came back within ``wait``."""
        self.send(frames)
        return self.recv(wait)

    def request(self, body: bytes, wait: float = 3.0) -> bytes | None:
        """One well-framed request with any body; the reply body or None."""
        rid = os.urandom(8)
        self.send([b"", rid, body])
        while True:
            frames = self.recv(wait)
            if frames is None:
                return None
            if len(frames) == 3 and frames[1] == rid:
                return frames[2]

    def clear(self, load: Any, wait: float = 3.0) -> dict[str, Any] | None:
        """Send ``{"enc": "clear", "load": load}``; the decoded reply load or None."""
        reply = self.request(codec.pack({"enc": "clear", "load": load}), wait)
        return None if reply is None else self.decode(reply)

    def decode(self, reply: bytes) -> dict[str, Any]:
        load = codec.unpack_envelope(reply).load
        self.record("reply", load)
        return load

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()


def reason(load: Any) -> str | None:
    """The refusal reason of a clear error load, else None."""
    if isinstance(load, dict) and isinstance(load.get("error"), dict):
        return load["error"].get("reason")
    return None


def publish_load(key: bytes, user: str, job: dict[str, Any] | bytes, *, cmd: str = "publish",
                 now: int | None = None, proof_user: str | None = None) -> dict[str, Any]:
    """A clear ``publish`` load: ``job`` (packed unless already bytes) and a proof made with
    ``key`` for ``user`` (``proof_user`` changes the user named after the MAC was computed)."""
    body = job if isinstance(job, bytes) else codec.pack(job)
    proof = make_proof(key, user, body, now=now)
    if proof_user is not None:
        proof["user"] = proof_user
    return {"cmd": cmd, "body": body, "proof": proof}


def hold_tcp(port: int, payloads: list[bytes], count: int = 1) -> list[socket.socket]:
    """Open ``count`` raw TCP connections per payload, send the payload, keep them open."""
    held = []
    for payload in payloads:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            if payload:
                sock.sendall(payload)
            held.append(sock)
    return held


# A ZMTP 3.0 greeting with the NULL mechanism, as a DEALER (then READY).
ZMTP_GREETING = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31
_READY = b"\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"
ZMTP_READY = b"\x04" + bytes([len(_READY)]) + _READY


def zmtp_frame(body: bytes, more: bool = False) -> bytes:
    flags = 0x01 if more else 0x00
    if len(body) < 256:
        return bytes([flags, len(body)]) + body
    return bytes([flags | 0x02]) + len(body).to_bytes(8, "big") + body
