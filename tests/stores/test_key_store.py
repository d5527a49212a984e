"""The key store's contract, on files and on PostgreSQL: Salt's admission table, salt-key's
moves, and the races between processes (workers of one master, or masters sharing a store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.crypt.identity import Identity, fingerprint, public_to_pem
from runtime.master.keys import ACCEPTED, DENIED, PENDING, REJECTED, STATUSES, InvalidMinionId
from runtime.master.store import factory
from tests.stores.conftest import in_processes, other_master


def pub() -> bytes:
    return Identity.generate().public_raw


def test_admission_table(opts: dict[str, Any]) -> None:
    keys = factory.open_key_store(opts)
    a, b = pub(), pub()
    assert keys.admit("web1", a) == "pending"
    assert keys.admit("web1", a) == "pending"
    assert keys.admit("web1", b) == "denied"                  # another key for a pending id
    assert keys.denied_key("web1") is not None and keys.denied_key("web1").public_raw == b
    assert keys.admit("web1", a, auto_accept=True) == "accepted"
    assert keys.lookup("web1").status == ACCEPTED and keys.lookup("web1").public_raw == a
    assert keys.admit("web1", a) == "accepted"
    assert keys.admit("web1", b) == "denied"
    assert keys.is_accepted("web1", a) and not keys.is_accepted("web1", b)
    assert keys.admit("db1", pub(), auto_accept=True) == "accepted"
    assert keys.reject("db1", include_accepted=True) == {ACCEPTED: ["db1"]}
    assert keys.admit("db1", pub()) == "rejected"              # rejected wins, whatever the key
    assert keys.lookup("nobody") is None and not keys.is_accepted("../x", a)
    keys.close()


def test_pending_cap_refuses_new_ids_only(opts: dict[str, Any]) -> None:
    keys = factory.open_key_store(opts)       # max_pending_keys: 5
    first = {f"m{i}": pub() for i in range(5)}
    assert [keys.admit(m, k) for m, k in first.items()] == ["pending"] * 5
    assert keys.admit("m5", pub()) == "pending_full"
    assert keys.lookup("m5") is None                            # nothing stored
    assert keys.admit("m0", first["m0"]) == "pending"           # a known id still answered
    assert keys.admit("m6", pub(), auto_accept=True) == "accepted"
    keys.accept("m0")
    assert keys.admit("m7", pub()) == "pending"                 # room again
    keys.close()


def test_salt_key_moves_and_listing(opts: dict[str, Any]) -> None:
    keys = factory.open_key_store(opts)
    for minion in ("Web2", "web1", "db1", "app1"):
        keys.admit(minion, pub())
    keys.admit("old", pub(), auto_accept=True)
    assert keys.list_keys() == {ACCEPTED: ["old"], PENDING: ["app1", "db1", "web1", "Web2"], REJECTED: [],
                                DENIED: []}
    assert keys.accept("web*") == {PENDING: ["web1"]}             # globs are case-sensitive, as salt-key's
    listed = keys.list_keys()
    assert listed[ACCEPTED] == ["old", "web1"] and listed[PENDING] == ["app1", "db1", "Web2"]
    assert keys.accept("web1 ") == {}                            # taken as typed, never stripped
    assert keys.reject("db1,app1") == {PENDING: ["app1", "db1"]}
    assert keys.accept("app1") == {}                             # rejected needs include_rejected
    assert keys.accept("app1", include_rejected=True) == {REJECTED: ["app1"]}
    assert keys.reject(["old"], include_accepted=True) == {ACCEPTED: ["old"]}
    keys.admit("web1", pub())                                    # a denied key beside the accepted one
    assert keys.accept("web1", include_denied=True) == {DENIED: ["web1"]}
    assert keys.denied_key("web1") is None and keys.lookup("web1").status == ACCEPTED
    assert keys.delete(["Web2", "nobody"]) == {PENDING: ["Web2"]}
    assert keys.delete("*") == {ACCEPTED: ["app1", "web1"], REJECTED: ["db1", "old"]}
    assert keys.list_keys() == {status: [] for status in STATUSES}
    keys.close()


def test_finger_and_print_show_the_stored_key(opts: dict[str, Any]) -> None:
    keys = factory.open_key_store(opts)
    a = pub()
    keys.admit("web1", a)
    keys.admit("web1", pub())
    shown = keys.finger("web1")
    assert shown[PENDING] == {"web1": fingerprint(a)} and set(shown) == {PENDING, DENIED}
    assert keys.print_keys("w*")[PENDING]["web1"] == public_to_pem(a).decode()
    assert keys.finger("nothing*") == {}
    keys.close()


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "x\x00y", "\x01", ".tmp-x", "a" * 256])
def test_ids_that_cannot_be_keys(opts: dict[str, Any], bad: str) -> None:
    keys = factory.open_key_store(opts)
    with pytest.raises(InvalidMinionId):
        keys.admit(bad, pub())
    assert not keys.is_accepted(bad, pub())
    keys.close()


def test_import_keeps_what_is_there(opts: dict[str, Any], tmp_path: Path) -> None:
    keys = factory.open_key_store(opts)
    source = factory.open_key_store({**opts, "master_store": "sqlite", "pki_dir": str(tmp_path / "old-pki")})
    a, b = pub(), pub()
    source.admit("web1", a, auto_accept=True)
    source.admit("web1", pub())                                  # denied beside it
    source.admit("db1", b)
    keys.admit("db1", pub(), auto_accept=True)                   # the store already has db1
    assert keys.import_records(source.records()) == 2            # web1 accepted + web1 denied
    assert keys.import_records(source.records()) == 0
    assert keys.is_accepted("web1", a) and keys.denied_key("web1") is not None
    assert keys.lookup("db1").status == ACCEPTED and keys.lookup("db1").public_raw != b
    source.close()
    keys.close()


# -- races: each process opens its own store, as a worker or another master does ---------------

def test_concurrent_hellos_never_exceed_the_pending_cap(opts: dict[str, Any], tmp_path: Path) -> None:
    def hello(i: int) -> list[str]:
        keys = factory.open_key_store(other_master(opts, tmp_path, f"m{i % 2}"))
        try:
            return [keys.admit(f"new-{i}-{n}", pub()) for n in range(4)]
        finally:
            keys.close()

    outcomes = [o for result in in_processes(hello, 4) for o in result]
    assert outcomes.count("pending") == 5 and outcomes.count("pending_full") == 11
    assert len(factory.open_key_store(opts).list_keys()[PENDING]) == 5


def test_one_id_two_keys_at_once_first_wins(opts: dict[str, Any], tmp_path: Path) -> None:
    presented = [pub() for _ in range(6)]

    def hello(i: int) -> str:
        keys = factory.open_key_store(other_master(opts, tmp_path, f"m{i % 2}"))
        try:
            return keys.admit("contested", presented[i])
        finally:
            keys.close()

    outcomes = in_processes(hello, 6)
    assert sorted(outcomes) == ["denied"] * 5 + ["pending"]
    keys = factory.open_key_store(opts)
    assert keys.lookup("contested").public_raw == presented[outcomes.index("pending")]
    keys.close()


def test_accept_and_reject_racing_leave_one_state(opts: dict[str, Any], tmp_path: Path) -> None:
    ids = [f"r{i}" for i in range(20)]
    keys = factory.open_key_store({**opts, "max_pending_keys": 100})
    for minion in ids:
        keys.admit(minion, pub())
    keys.close()

    def operator(i: int) -> dict[str, list[str]]:
        store = factory.open_key_store(other_master({**opts, "max_pending_keys": 100}, tmp_path, f"m{i}"))
        try:
            if i == 0:
                return store.accept(ids, include_rejected=True)
            return store.reject(ids, include_accepted=True)
        finally:
            store.close()

    accepted, rejected = in_processes(operator, 2)
    keys = factory.open_key_store(opts)
    listed = keys.list_keys()
    assert sorted(listed[ACCEPTED] + listed[REJECTED]) == sorted(ids) and not listed[PENDING]
    # the one that ran second moved every key the first one had moved: no lost update
    second = accepted if accepted.get(REJECTED) else rejected
    first = rejected if second is accepted else accepted
    assert listed[ACCEPTED if second is accepted else REJECTED] == sorted(ids, key=str.lower)
    assert sorted(m for v in first.values() for m in v) == sorted(ids)
    assert sorted(m for v in second.values() for m in v) == sorted(ids)
    keys.close()
