"""File-server race (issue 16, item 5; SECURITY.md class 4).

The file server checked a path (its real path inside the root?), then opened it again by name:
swapping a symlink inside the roots between the two served a file from outside them (474 of 718
chunks).  Now every file is opened once, component by component from its root, and everything
served (chunk, hash, size, mode) is read from that descriptor.

Each attack runs a thread that swaps a symlink inside the roots as fast as it can (an actor who
can write in the roots, A4, racing an accepted minion, A1) while the rogue minion fetches: every
answer must be the inside file or a refusal, never a byte of the canary file beside the roots.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.security.canary import new_canary
from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import Lab, data_cache_writes

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)

SECONDS = float(os.environ.get("SALTPAN_RACE_SECONDS", "3"))
REFUSAL_LOG = r"file server: refused .* resolves outside the roots"


@contextmanager
def swapping(link: Path, inside: str, outside: str) -> Iterator[list[int]]:
    """Swap ``link`` between the two targets (atomic renames) until the block ends; yields a
    one-item list counting the swaps."""
    stop = threading.Event()
    swaps = [0]
    tmp = link.with_name(link.name + ".swap")

    def run() -> None:
        while not stop.is_set():
            os.symlink(outside if swaps[0] % 2 else inside, tmp)
            os.replace(tmp, link)
            swaps[0] += 1

    os.symlink(inside, link)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield swaps
    finally:
        stop.set()
        thread.join(5)
        for path in (link, tmp):
            path.unlink(missing_ok=True)


def states(lab: Lab) -> Path:
    return lab.roots / "states"


def race_writes(lab: Lab, *names: str) -> list[str]:
    rel = states(lab).relative_to(lab.base)
    return [f"{rel}/{name}*" for name in names]


def test_serve_file_through_a_swapped_file_link(lab: Lab) -> None:
    """The issue's instance: _serve_file of a link swapped between a file inside and the
    canary file outside."""
    counts = {"inside": 0, "refused": 0}
    with lab_attack(lab, allowed_writes=race_writes(lab, "race-file"), logs=[("master", REFUSAL_LOG)]) as atk:
        with swapping(states(lab) / "race-file", "hello.txt", str(lab.roots / "secret.txt")) as swaps:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                reply = lab.rogue.request({"cmd": "_serve_file", "path": "salt://race-file", "saltenv": "base"})
                if reply and "data" in reply:
                    assert reply["data"] == b"hello\n" and reply["size"] == 6, reply
                    counts["inside"] += 1
                else:
                    assert reply == {} or reason(reply) == "access_denied", reply
                    counts["refused"] += 1
        atk.record("counts", counts)
    assert swaps[0] > 100 and counts["inside"] and counts["refused"], (swaps, counts)


def test_serve_file_through_a_swapped_directory_link(lab: Lab) -> None:
    """A directory component swapped between a directory inside and the directory holding the
    canary: ``race-dir/secret.txt`` exists on both sides."""
    inside_dir = states(lab) / "race-inside"
    inside_dir.mkdir()
    (inside_dir / "secret.txt").write_text("not the secret\n")
    counts = {"inside": 0, "refused": 0}
    try:
        with lab_attack(lab, allowed_writes=race_writes(lab, "race-dir"), logs=[("master", REFUSAL_LOG)]) as atk:
            with swapping(states(lab) / "race-dir", "race-inside", str(lab.roots)):
                deadline = time.monotonic() + SECONDS
                while time.monotonic() < deadline:
                    reply = lab.rogue.request({"cmd": "_serve_file", "path": "race-dir/secret.txt",
                                               "saltenv": "base"})
                    if reply and "data" in reply:
                        assert reply["data"] == b"not the secret\n", reply
                        counts["inside"] += 1
                    else:
                        counts["refused"] += 1
            atk.record("counts", counts)
        assert counts["inside"] and counts["refused"], counts
    finally:
        (inside_dir / "secret.txt").unlink()
        inside_dir.rmdir()


def test_hashes_and_metadata_during_swaps(lab: Lab) -> None:
    """_file_hash and _file_find of the swapped link: a hash of the outside file would let an
    attacker confirm a guess of its content; its size and mode say something too."""
    secret = (lab.roots / "secret.txt").read_bytes()
    secret_hash = hashlib.sha256(secret).hexdigest()
    inside_hash = hashlib.sha256(b"hello\n").hexdigest()
    seen = set()
    with lab_attack(lab, allowed_writes=race_writes(lab, "race-hash"), logs=[("master", REFUSAL_LOG)]) as atk:
        with swapping(states(lab) / "race-hash", "hello.txt", str(lab.roots / "secret.txt")):
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                for cmd in ("_file_hash", "_file_find"):
                    reply = lab.rogue.request({"cmd": cmd, "path": "race-hash", "saltenv": "base"})
                    if reply and "hsum" in reply:
                        seen.add(reply["hsum"])
                        assert reply.get("size", 6) == 6, reply
        atk.record("hashes", sorted(seen))
    assert secret_hash not in seen and seen <= {inside_hash}, seen


def test_chunks_of_a_large_file_during_swaps(lab: Lab) -> None:
    """A 3 MiB file served in 1 MiB chunks, its link swapped with a 3 MiB file outside full of
    a canary: no chunk at any offset holds a byte of the outside file."""
    big_in = states(lab) / "race-big-inside.bin"
    big_out = lab.roots / "race-big-outside.bin"
    canary = new_canary("race-big")
    lab.canaries.add("race-big-outside", canary)
    big_in.write_bytes(b"i" * (3 * 1024 * 1024))
    big_out.write_bytes((canary.encode() + b"\n") * (3 * 1024 * 1024 // (len(canary) + 1) + 1))
    chunks = {"inside": 0, "refused": 0}
    try:
        with lab_attack(lab, allowed_writes=race_writes(lab, "race-big"), logs=[("master", REFUSAL_LOG)]) as atk:
            with swapping(states(lab) / "race-big", big_in.name, str(big_out)):
                deadline = time.monotonic() + SECONDS
                loc = 0
                while time.monotonic() < deadline:
                    reply = lab.rogue.request({"cmd": "_serve_file", "path": "race-big", "saltenv": "base",
                                               "loc": loc})
                    if reply and "data" in reply:
                        assert set(reply["data"]) <= {ord("i")}, reply["data"][:64]
                        chunks["inside"] += 1
                        loc = 0 if reply["done"] else reply["loc"]
                    else:
                        chunks["refused"] += 1
            atk.record("chunks", chunks)
        assert chunks["inside"] and chunks["refused"], chunks
    finally:
        big_in.unlink()
        big_out.unlink()


def test_pillar_sls_swapped_while_compiling(lab: Lab) -> None:
    """The compiler reads the roots the same way: the rogue's pillar includes ``race.sls``,
    swapped between an sls inside and ``secret.sls`` beside the pillar roots (leaked: <canary>)
    while the rogue asks for its pillar again and again."""
    pillar = lab.roots / "pillar"
    race = pillar / "race.sls"
    keep = pillar / "race-inside.sls"
    race.rename(keep)
    values = set()
    try:
        with lab_attack(lab, allowed_writes=[*data_cache_writes(lab),
                                             f"{pillar.relative_to(lab.base)}/race*"]) as atk:
            with swapping(race, keep.name, str(lab.roots / "secret.sls")):
                deadline = time.monotonic() + SECONDS
                while time.monotonic() < deadline:
                    got = lab.rogue.request({"cmd": "_pillar"})["pillar"]
                    values.add(str(got.get("race")))
                    assert "leaked" not in got, got
            atk.record("values", sorted(values))
        assert "inside" in values, values
    finally:
        keep.rename(race)
