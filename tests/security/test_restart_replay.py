"""Replay across a master restart (issue 16, item 6; SECURITY.md class 6).

Hello nonces were forgotten at master start while a hello stays valid for 300 s, so hellos
captured on the wire were accepted again after a restart, and (four per minion) evicted the real
minion's sessions.  Now claimed nonces outlive the restart, and anything timestamped before the
master started (hellos, client proofs) is refused, which holds even when the session store was
lost (a tmpfs sock_dir after a reboot).

Its own small cluster (restarting the lab's master would end every other attack's sessions): a
master, the minion ``cap01`` reaching it through a recording relay (actor A2), and the master's
own user as the local publisher whose proofs A2 also records.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import codec
from runtime.crypt.clientkey import client_key_path, load_client_key
from runtime.crypt.identity import public_from_pem
from tests.integration.cluster import Cluster
from tests.security.clients import RawClient, publish_load, reason
from tests.security.fakemaster import FakeMaster

MINION = "cap01"


class RestartLab:
    def __init__(self, base: Path):
        (base / "pillar").mkdir()
        (base / "states").mkdir()
        (base / "pillar" / "top.sls").write_text("base: {}\n")
        (base / "states" / "top.sls").write_text("base: {}\n")
        self.cl = Cluster(base)
        self.fake: FakeMaster | None = None

    def start(self) -> RestartLab:
        self.cl.start_master()
        pki = Path(self.cl.opts()["pki_dir"])
        self.fake = FakeMaster(self.cl.ret_port, self.cl.publish_port,
                               public_from_pem((pki / "master.pub").read_bytes())).start()
        self.cl.add_minion(MINION, master_port=self.fake.ret_port, publish_port=self.fake.pub_port)
        self.cl.start_minions()
        self.cl.accept_all([MINION])
        self.cl.wait_ping([MINION])
        return self

    def stop(self) -> None:
        if self.fake is not None:
            self.fake.close()
        self.cl.stop()

    def restart_master(self, *, lose_store: bool = False, while_down: float = 0.0) -> None:
        self.cl.master.stop()
        if lose_store:      # sock_dir on tmpfs, rebooted: the session store and its nonces are gone
            for path in Path(self.cl.sock_dir).glob("sessions.sqlite*"):
                path.unlink()
        time.sleep(while_down)
        self.cl.start_master()
        self.cl.wait_ping([MINION], timeout=60)

    def hellos(self, since: int = 0) -> list[bytes]:
        """Every hello of cap01 the relay recorded (from frame ``since`` on)."""
        out = []
        for body in self.fake.snapshot()[since:]:
            try:
                env = codec.unpack_envelope(body)
            except codec.DecodeError:
                continue
            if env.enc == codec.ENC_CLEAR and env.load.get("cmd") == "_auth" and env.load.get("id") == MINION:
                out.append(body)
        return out

    def sealed_requests(self) -> list[bytes]:
        """cap01's sealed requests the relay recorded (heartbeats, returns...)."""
        out = []
        for body in self.fake.snapshot():
            try:
                env = codec.unpack_envelope(body)
            except codec.DecodeError:
                continue
            header = env.load.get("h") if env.enc == codec.ENC_AES else None
            # a request, a heartbeat's marked (replies and publications have other headers)
            if isinstance(header, bytes) and set(codec.unpack(header)) - {"k"} == {"v", "sid", "ctr", "ts"}:
                out.append(body)
        return out

    def raw(self) -> RawClient:
        return RawClient(self.cl.ret_port)

    def minion_still_answers(self) -> None:
        """The real minion still answers (its session was not evicted by the replays)."""
        data = self.cl.run_json("-L", MINION, "test.ping", "--timeout", "5")
        assert data.get(MINION) is True, data


@pytest.fixture(scope="module")
def rlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartLab]:
    lab = RestartLab(tmp_path_factory.mktemp("restart"))
    try:
        yield lab.start()
    finally:
        lab.stop()


def replies(client: RawClient, bodies: list[bytes]) -> list[str]:
    out = []
    for body in bodies:
        reply = client.request(body, wait=5)
        load = codec.unpack_envelope(reply).load if reply else None
        if load is None:
            out.append("no reply")
        elif "error" in load:
            out.append(f"error:{reason(load)}")
        else:
            out.append(f"{load['outcome']}:{load['reason']}")
    return out


def session_count(rlab: RestartLab) -> int:
    from runtime.master.store.sqlite_sessions import SQLiteSessionStore

    store = SQLiteSessionStore.in_sock_dir(str(rlab.cl.sock_dir))
    try:
        return len(store.minion_sessions(MINION))
    finally:
        store.close()


def test_hellos_delivered_before_a_restart_are_refused_after_it(rlab: RestartLab) -> None:
    """The issue's instance: every hello A2 recorded (each answered before), replayed after a
    restart, many times over (enough to evict four sessions): all refused, the real minion
    unaffected."""
    captured = rlab.hellos()
    assert captured, "the relay recorded no hello"
    rlab.restart_master()
    before = session_count(rlab)
    client = rlab.raw()
    try:
        outcomes = replies(client, captured * 4)
    finally:
        client.close()
    assert all(o in ("refused:replayed", "refused:clock_skew") for o in outcomes), outcomes
    assert session_count(rlab) == before
    rlab.minion_still_answers()


def test_hellos_never_delivered_before_the_restart(rlab: RestartLab) -> None:
    """A2 keeps the hellos the minion sent while the master was down (never answered, their
    nonces never claimed) and replays them once it is back: made before the master started."""
    mark = len(rlab.fake.snapshot())
    rlab.restart_master(while_down=2.5)
    unanswered = [h for h in rlab.hellos(mark)
                  if codec.unpack_envelope(h).load["ts"] < _started(rlab)]
    assert unanswered, "the minion sent no hello while the master was down"
    client = rlab.raw()
    try:
        outcomes = replies(client, unanswered)
    finally:
        client.close()
    assert set(outcomes) == {"refused:clock_skew"}, outcomes
    rlab.minion_still_answers()


def test_hellos_replayed_after_a_restart_that_lost_the_store(rlab: RestartLab) -> None:
    """sock_dir on tmpfs and a reboot: the claimed nonces are gone with the store; the start
    time still refuses every hello made before it."""
    captured = rlab.hellos()
    rlab.restart_master(lose_store=True)
    client = rlab.raw()
    try:
        outcomes = replies(client, captured)
    finally:
        client.close()
    assert set(outcomes) == {"refused:clock_skew"}, outcomes
    rlab.minion_still_answers()


def test_client_proofs_and_sealed_requests_across_a_restart(rlab: RestartLab) -> None:
    """Siblings: a local publisher's proof recorded on the loopback (used once before the
    restart) and one made but never sent, and the minion's sealed requests: all refused after
    the restart; no job is published."""
    opts = rlab.cl.opts()
    user = pwd.getpwuid(os.geteuid()).pw_name
    key = load_client_key(client_key_path(opts["cachedir"], user))
    job = {"tgt": [MINION], "tgt_type": "list", "fun": "test.echo", "arg": ["replayed"]}
    used, unused = publish_load(key, user, job), publish_load(key, user, job)
    client = rlab.raw()
    try:
        assert "jid" in client.clear(used)
    finally:
        client.close()
    sealed = rlab.sealed_requests()[-20:]
    assert sealed
    rlab.restart_master()
    client = rlab.raw()
    try:
        assert reason(client.clear(used)) in ("replayed", "stale")
        assert reason(client.clear(unused)) == "stale"
        for body in sealed:
            assert reason(client.decode(client.request(body))) in ("unknown_session", "too_old", "stale")
    finally:
        client.close()
    from runtime.master.store.sqlite_jobs import SQLiteJobCache

    time.sleep(0.5)
    jobs = SQLiteJobCache(opts["cachedir"])
    try:
        echoes = [job for job in jobs.list_jobs(1000) if job["fun"] == "test.echo"]
    finally:
        jobs.close()
    assert len(echoes) == 1, echoes          # the one published before the restart


def _started(rlab: RestartLab) -> int:
    from runtime.master.store.sqlite_sessions import SQLiteSessionStore

    store = SQLiteSessionStore.in_sock_dir(str(rlab.cl.sock_dir))
    try:
        return store.started_ms()
    finally:
        store.close()
