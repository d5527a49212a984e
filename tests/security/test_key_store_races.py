"""The key store under concurrent hellos, ids that cannot name a key, and key matches taken as
typed (issue 16, item 9: the parts outside the request path; SECURITY.md classes 8 and 9).

* The pending cap was checked, then written, by two workers at once: 42 keys stored against a
  cap of 40.  Writes now hold one lock shared by every process (``pki_dir/.keystore.lock``).
* ``salt/auth`` events were fired for ids like ``../x`` and ``a/b`` before the id was found
  unusable: a reactor could take them for a path.
* ``saltpan key -d 'web1 '`` matched the accepted ``web1`` because matches were stripped; and
  an id holding a comma, once confirmed, was split again into other ids.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from runtime import codec
from runtime.crypt.handshake import start_auth
from runtime.crypt.identity import Identity
from runtime.master.keys import id_problem
from tests.security.clients import RawClient
from tests.security.guard import lab_attack
from tests.security.lab import ACCEPTED, MAX_PENDING, PENDING, Lab

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def hello_body(minion_id: str, identity: Identity | None = None) -> bytes:
    return codec.pack_envelope(codec.ENC_CLEAR, start_auth(identity or Identity.generate(), minion_id).load)


def pipelined(client: RawClient, bodies: list[bytes], wait: float = 15.0) -> list[dict | None]:
    """Send every body at once on one connection, then collect the replies (None: no reply)."""
    rids = [os.urandom(8) for _ in bodies]
    for rid, body in zip(rids, bodies, strict=True):
        client.send([b"", rid, body])
    replies: dict[bytes, dict] = {}
    deadline = time.monotonic() + wait
    while len(replies) < len(rids) and time.monotonic() < deadline:
        frames = client.recv(max(0.1, deadline - time.monotonic()))
        if frames is not None and len(frames) == 3:
            replies[frames[1]] = client.decode(frames[2])
    return [replies.get(rid) for rid in rids]


def at_once(clients: list[RawClient], shares: list[list[bytes]]) -> list[dict | None]:
    """Each client sends its share in its own thread, all released together."""
    barrier = threading.Barrier(len(clients))
    results: list[list[dict | None]] = [[] for _ in clients]

    def run(i: int) -> None:
        barrier.wait()
        results[i] = pipelined(clients[i], shares[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return [reply for share in results for reply in share]


def outcome(reply: dict | None) -> str:
    if reply is None:
        return "no reply"
    if "error" in reply:
        return f"error:{reply['error'].get('reason')}"
    return reply["outcome"] if not reply.get("reason") else f"{reply['outcome']}:{reply['reason']}"


def test_pending_cap_holds_under_concurrent_hellos(lab: Lab) -> None:
    """Hellos for new ids from eight source addresses at once (both workers busy), three times
    as many as the room left below ``max_pending``: exactly ``max_pending`` keys stored."""
    before = set(lab.keys()["minions_pre"])
    room = MAX_PENDING - len(before)
    ids = [f"race-{i:03d}" for i in range(3 * room)]
    try:
        with lab_attack(lab, keys_change=True, logs=[("master", r"refused \(pending_full\)")]) as atk:
            clients = [atk.raw(source=f"127.0.0.{40 + i}") for i in range(8)]
            todo = list(ids)
            for _ in range(5):                       # re-send what the proxy answered busy/rate_limited
                replies = at_once(clients, [[hello_body(m) for m in todo[i::8]] for i in range(8)])
                sent = [m for i in range(8) for m in todo[i::8]]
                todo = [m for m, r in zip(sent, replies, strict=True) if outcome(r).startswith(("error", "no"))]
                if not todo:
                    break
            assert not todo, f"{len(todo)} hellos never answered"
            pending = lab.keys()["minions_pre"]
            assert len(pending) == MAX_PENDING, f"{len(pending)} pending keys against a cap of {MAX_PENDING}"
    finally:
        lab.cl.key("-d", "race-*", "-y")
    assert set(lab.keys()["minions_pre"]) == before


def test_one_new_id_many_keys_at_once(lab: Lab) -> None:
    """Twelve keys for one new id at the same instant: one is pending and is the key stored;
    the eleven others are denied (never silently overwriting the first)."""
    identities = [Identity.generate() for _ in range(12)]
    try:
        with lab_attack(lab, keys_change=True) as atk:
            clients = [atk.raw(source=f"127.0.0.{50 + i}") for i in range(6)]
            bodies = [hello_body("race-same", ident) for ident in identities]
            replies = at_once(clients, [bodies[i::6] for i in range(6)])
            order = [ident for i in range(6) for ident in identities[i::6]]
            outcomes = [outcome(r) for r in replies]
            assert sorted(outcomes) == ["denied"] * 11 + ["pending"], outcomes
            winner = order[outcomes.index("pending")]
            finger = lab.cl.key("-f", "race-same", "--out", "json")
            assert winner.fingerprint in finger.stdout
    finally:
        lab.cl.key("-d", "race-same", "-y")


BAD_IDS = ["../x", "a/b", "a\\b", "..", ".", ".tmp-evil", "x\ny", "x\x00y", "\x7f", "web01/../web01",
           "../../minions/web01", "x" * 300]


def test_unusable_ids_fire_no_auth_event(lab: Lab) -> None:
    """Correctly signed hellos for ids that cannot name a key file: refused (invalid_id, or
    malformed when longer than 255 bytes), nothing stored, and no ``salt/auth`` event at all."""
    with lab_attack(lab, logs=[("master", r"auth from '\.\./x' key [0-9a-f:]+: refused \(invalid_id\)")]) as atk:
        raw = atk.raw()
        for bad in BAD_IDS:
            load = start_auth(Identity.generate(), "placeholder").load
            signed = start_auth(Identity.generate(), bad).load if len(bad.encode()) <= 255 else dict(load, id=bad)
            reply = raw.clear(signed)
            expected = ("invalid_id",) if len(bad.encode()) <= 255 else ("malformed",)
            got = reply.get("reason") or reply.get("error", {}).get("reason")
            assert got in expected, (bad, reply)
        time.sleep(0.5)
        # (pend01 and rej01 keep authenticating meanwhile: their events are legitimate)
        fired = [data.get("id") for tag, data in atk.events if tag.startswith("salt/auth")]
        assert [i for i in fired if i in BAD_IDS or id_problem(i) is not None] == [], fired


def test_key_matches_are_taken_as_typed(lab: Lab) -> None:
    """'web01 ', ' web01', 'web01\\t' and 'db01 ,x' match no accepted key (salt-key never strips):
    -d, -r and -a leave the store as it was."""
    with lab_attack(lab) as atk:
        for args in (["-d", "web01 "], ["-d", " web01"], ["-d", "web01\t"], ["-d", "db01 ,x"],
                     ["-r", "web01 ", "--include-accepted"], ["-a", f"{PENDING} "]):
            proc = lab.cl.key(*args, "-y")
            atk.record(f"key {args}", proc.stdout)
            assert proc.returncode == 0 and "does not match any" in proc.stdout, (args, proc.stdout, proc.stderr)
        assert set(ACCEPTED) <= set(lab.keys()["minions"])


def test_confirmed_ids_are_acted_on_exactly(lab: Lab) -> None:
    """Pending ids 'x,race-comma' and 'race-comma': accepting 'x?race-comma' (which matches only
    the first) must not accept the second, which the operator never saw."""
    try:
        with lab_attack(lab, keys_change=True) as atk:
            raw = atk.raw()
            for minion_id in ("x,race-comma", "race-comma", "race-[c]omma"):
                assert raw.clear(start_auth(Identity.generate(), minion_id).load)["outcome"] == "pending"
            proc = lab.cl.key("-a", "x?race-comma", "-y")
            assert "Key for minion x,race-comma accepted." in proc.stdout, proc.stdout
            proc = lab.cl.key("-a", "race-?c?omma", "-y")       # matches only 'race-[c]omma' literally
            keys = lab.keys()
            assert {"x,race-comma", "race-[c]omma"} <= set(keys["minions"])
            assert "race-comma" in keys["minions_pre"] and "race-comma" not in keys["minions"]
    finally:
        lab.cl.key("-d", "*race-*comma", "-y")
