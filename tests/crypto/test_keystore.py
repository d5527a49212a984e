"""The key store: Salt's directories and salt-key semantics, modes, id validation, flood limit."""

from __future__ import annotations

import os
import stat
import time

import pytest

from runtime.crypt.errors import KeyFileError
from runtime.crypt.identity import Identity, fingerprint, public_to_pem
from runtime.master.keys import (
    ACCEPTED,
    DENIED,
    PENDING,
    REJECTED,
    InvalidMinionId,
    id_problem,
    valid_id,
)
from runtime.master.store.file_keys import FileKeyStore


def pub() -> bytes:
    return Identity.generate().public_raw


@pytest.fixture
def store(tmp_path):
    return FileKeyStore(str(tmp_path / "pki"), max_pending=5)


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_layout_and_modes(store, tmp_path):
    key = pub()
    store.admit("web1", key)
    pki = tmp_path / "pki"
    assert mode(pki) == 0o700
    for status in (ACCEPTED, PENDING, REJECTED, DENIED):
        assert mode(pki / status) == 0o700
    assert mode(pki / PENDING / "web1") == 0o600
    assert (pki / PENDING / "web1").read_bytes() == public_to_pem(key)
    store.accept("web1")
    assert mode(pki / ACCEPTED / "web1") == 0o600
    assert not (pki / PENDING / "web1").exists()


def test_admit_matrix(store):
    k1, k2 = pub(), pub()
    assert store.admit("a", k1) == "pending"
    assert store.admit("a", k1) == "pending"
    assert store.admit("a", k2) == "denied"              # pending with another key
    assert store.denied_key("a").public_raw == k2
    assert store.lookup("a").public_raw == k1            # the pending key is untouched
    assert store.admit("a", k1, auto_accept=True) == "accepted"
    assert store.lookup("a").status == ACCEPTED
    assert store.admit("a", k1) == "accepted"
    assert store.admit("a", k2) == "denied"              # accepted with another key
    assert store.is_accepted("a", k1) and not store.is_accepted("a", k2)
    assert store.admit("b", k1, auto_accept=True) == "accepted"
    store.reject("b", include_accepted=True)
    assert store.admit("b", k1) == "rejected"
    assert store.admit("b", k2) == "rejected"
    assert store.admit("b", k1, auto_accept=True) == "rejected"  # rejected wins over auto_accept


def test_pending_flood_limit(store):
    for i in range(5):
        assert store.admit(f"m{i}", pub()) == "pending"
    assert store.admit("m5", pub()) == "pending_full"
    assert "m5" not in store.list_keys()[PENDING]
    assert store.admit("m0", store.lookup("m0").public_raw) == "pending"   # known ids still answered
    assert store.admit("new", pub(), auto_accept=True) == "accepted"       # auto_accept does not pend
    store.accept("m0")
    assert store.admit("m6", pub()) == "pending"


def test_list_accept_reject_delete_with_globs_and_lists(store):
    for name in ("web1", "web2", "db1"):
        store.admit(name, pub())
    assert store.list_keys() == {ACCEPTED: [], PENDING: ["db1", "web1", "web2"], REJECTED: [], DENIED: []}
    assert store.accept("web*") == {PENDING: ["web1", "web2"]}
    assert store.accept("web*") == {}                    # nothing pending matches any more
    assert store.reject("db1,nothere") == {PENDING: ["db1"]}
    assert store.reject("web1") == {}                    # accepted keys need include_accepted
    assert store.reject("web1", include_accepted=True) == {ACCEPTED: ["web1"]}
    assert store.accept("db1") == {}                     # rejected keys need include_rejected
    assert store.accept("db1", include_rejected=True) == {REJECTED: ["db1"]}
    assert store.list_keys() == {ACCEPTED: ["db1", "web2"], PENDING: [], REJECTED: ["web1"], DENIED: []}
    assert store.delete("*1") == {ACCEPTED: ["db1"], REJECTED: ["web1"]}
    assert store.list_keys()[ACCEPTED] == ["web2"]


def test_accept_all_pending(store):
    for name in ("a", "b", "c"):
        store.admit(name, pub())
    assert store.accept("*") == {PENDING: ["a", "b", "c"]}


def test_denied_key_can_be_accepted_explicitly_and_deleted(store):
    k1, k2 = pub(), pub()
    store.admit("a", k1, auto_accept=True)
    store.admit("a", k2)
    assert store.list_keys()[DENIED] == ["a"]
    assert store.accept("a") == {}
    assert store.accept("a", include_denied=True) == {DENIED: ["a"]}
    assert store.is_accepted("a", k2) and store.list_keys()[DENIED] == []
    store.admit("a", k1)
    assert store.delete("a") == {ACCEPTED: ["a"], DENIED: ["a"]}
    assert store.lookup("a") is None and store.denied_key("a") is None


def test_finger_and_print(store):
    k1, k2 = pub(), pub()
    store.admit("web1", k1, auto_accept=True)
    store.admit("web2", k2)
    assert store.finger("web*") == {ACCEPTED: {"web1": fingerprint(k1)}, PENDING: {"web2": fingerprint(k2)}}
    assert store.print_keys("web1") == {ACCEPTED: {"web1": public_to_pem(k1).decode()}}


@pytest.mark.parametrize("bad", ["", ".", "..", "../etc", "a/b", "a\\b", "a\0b", "tab\there", "x" * 256,
                                 "\x7f", ".tmp-x", "\ud800", 5, None])
def test_invalid_ids(store, bad):
    assert not valid_id(bad) and id_problem(bad)
    with pytest.raises(InvalidMinionId):
        store.admit(bad, pub())
    assert not store.is_accepted(bad, pub())


@pytest.mark.parametrize("good", ["web1", "web-1.example.com", "Web_1", ".hidden", "ü-host", "a b", "x" * 255])
def test_valid_ids(good):
    assert valid_id(good)


def test_traversal_never_escapes(store, tmp_path):
    with pytest.raises(InvalidMinionId):
        store.admit("../../evil", pub())
    assert not (tmp_path / "evil").exists()
    assert store.accept("../*") == {}


def test_planted_symlink_is_refused(store, tmp_path):
    target = tmp_path / "outside.pem"
    target.write_bytes(public_to_pem(pub()))
    os.symlink(target, tmp_path / "pki" / ACCEPTED / "evil")
    with pytest.raises(KeyFileError):
        store.lookup("evil")
    assert "evil" not in store.list_keys()[ACCEPTED]  # listings skip non-files


def test_garbage_key_file_is_an_error_naming_it(store, tmp_path):
    (tmp_path / "pki" / PENDING / "junk").write_text("nope")
    with pytest.raises(KeyFileError, match="junk"):
        store.lookup("junk")


def test_temp_files_are_not_listed(store, tmp_path):
    (tmp_path / "pki" / PENDING / ".tmp-abc").write_text("x")
    assert store.list_keys()[PENDING] == []


def test_matches_are_taken_as_typed_as_salt_key_does(store):
    """salt-key splits a match on commas and never strips: 'web1 ' is not web1."""
    for name in ("web1", "web1 ", "db1"):
        store.admit(name, pub())
    assert store.finger("web1 ").keys() == {PENDING}
    assert list(store.finger("web1 ")[PENDING]) == ["web1 "]
    assert store.delete(" web1") == {}
    assert store.delete("db1 ") == {}
    assert store.accept("web1 ") == {PENDING: ["web1 "]}
    assert store.list_keys()[PENDING] == ["db1", "web1"]
    assert store.accept("db1, web1") == {PENDING: ["db1"]}         # ' web1' matches nothing


def test_a_list_of_ids_is_exact(store):
    """What an operator confirmed is acted on exactly, even for ids holding commas or globs:
    accepting 'x,ghost' must not accept 'ghost'."""
    for name in ("x,ghost", "ghost", "w*", "wild"):
        store.admit(name, pub())
    assert store.accept(["x,ghost"]) == {PENDING: ["x,ghost"]}
    assert store.accept(["w*"]) == {PENDING: ["w*"]}
    assert store.list_keys()[PENDING] == ["ghost", "wild"]
    assert store.delete(["ghost", "nothere"]) == {PENDING: ["ghost"]}


def _admit_many(pki: str, names: list[str], max_pending: int, start: object) -> None:
    store = FileKeyStore(pki, max_pending=max_pending)
    start.wait()
    for name in names:
        store.admit(name, Identity.generate().public_raw)


def test_pending_cap_holds_across_processes(tmp_path):
    """Six processes admit 20 new ids each against a cap of 40 at once: exactly 40 stored."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    pki = str(tmp_path / "pki")
    FileKeyStore(pki, max_pending=40)
    start = ctx.Event()
    procs = [ctx.Process(target=_admit_many, args=(pki, [f"p{i}-{n}" for n in range(20)], 40, start))
             for i in range(6)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * 6
    assert len(FileKeyStore(pki).list_keys()[PENDING]) == 40


def _admit_one(pki: str, raw: bytes, start: object, out: object) -> None:
    store = FileKeyStore(pki)
    start.wait()
    out.put((raw, store.admit("same", raw)))


def test_first_key_wins_across_processes(tmp_path):
    """Eight processes present eight keys for one new id at once: one is pending (and its key is
    the one stored), the seven others are denied, none overwritten."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    pki = str(tmp_path / "pki")
    store = FileKeyStore(pki)
    start, out = ctx.Event(), ctx.Queue()
    keys = [Identity.generate().public_raw for _ in range(8)]
    procs = [ctx.Process(target=_admit_one, args=(pki, raw, start, out)) for raw in keys]
    for proc in procs:
        proc.start()
    start.set()
    results = [out.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(10)
    pending = [raw for raw, outcome in results if outcome == "pending"]
    assert sorted(outcome for _, outcome in results) == ["denied"] * 7 + ["pending"]
    assert store.lookup("same").public_raw == pending[0]


def _temp_files(pki) -> list[str]:
    return sorted(str(p.relative_to(pki)) for p in pki.rglob(".tmp-*"))


def test_a_writer_holding_the_lock_stops_new_keys_but_not_known_ones(tmp_path):
    """Another process's writer (a second store's flock on the same pki_dir) holds the lock: a
    minion whose key is accepted as presented is answered at once, and a new key waits with its
    file already written beside the store, renamed into place once the lock is free."""
    import threading

    pki = tmp_path / "pki"
    store, writer = FileKeyStore(str(pki)), FileKeyStore(str(pki))
    known, new = pub(), pub()
    assert store.admit("known", known, auto_accept=True) == "accepted"
    outcomes: dict[str, str] = {}

    def admit(name: str, raw: bytes) -> None:
        outcomes[name] = store.admit(name, raw, auto_accept=True)

    with writer._locked():
        first = threading.Thread(target=admit, args=("known", known))
        first.start()
        first.join(10)
        assert outcomes == {"known": "accepted"}
        second = threading.Thread(target=admit, args=("new", new))
        second.start()
        deadline = time.monotonic() + 10
        while not _temp_files(pki) and time.monotonic() < deadline:
            time.sleep(0.01)
        staged = _temp_files(pki)
        assert len(staged) == 1 and "/" not in staged[0]         # in pki_dir, beside the status dirs
        assert (pki / staged[0]).read_bytes() == public_to_pem(new)
        assert second.is_alive() and "new" not in outcomes      # waits for the lock
    second.join(10)
    assert outcomes["new"] == "accepted"
    assert (pki / ACCEPTED / "new").read_bytes() == public_to_pem(new)
    assert mode(pki / ACCEPTED / "new") == 0o600
    assert _temp_files(pki) == []


def test_a_staged_key_that_is_not_stored_leaves_nothing_behind(store, tmp_path):
    k = pub()
    assert store.admit("d", k) == "pending"
    assert store.admit("d", pub()) == "denied"                  # not staged: written under the lock
    assert store.admit("d", k, auto_accept=True) == "accepted"  # staged pending -> accepted
    assert store.lookup("d").status == ACCEPTED and store.lookup("d").public_raw == k
    for i in range(5):
        assert store.admit(f"m{i}", pub()) == "pending"
    assert store.admit("m5", pub()) == "pending_full"           # staged, then refused under the lock
    assert _temp_files(tmp_path / "pki") == []
