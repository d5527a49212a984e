"""Class 5: replayed, forged and clear-text publications (CVE-2022-22936, CVE-2016-1866).

Salt minions ran replayed publications, and older Salt accepted clear-text ones.  ``mitm01``
reaches the master through the fake master, which relays the real publications and injects
its own on the very socket the minion subscribes to.  A publication must carry the real
master's signature over header and ciphertext, decrypt under the current publish key, and be
new (serial window, timestamp, jid never run); the wire never carries a job in clear.
"""

from __future__ import annotations

import os
import time

import pytest

from runtime import codec, transport
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublishKey, seal_publication
from tests.security.guard import lab_attack
from tests.security.lab import VICTIM, Lab, publish, wait_return

pytestmark = pytest.mark.slow   # `make test-slow` (CI runs it after `make test`)


def job(lab: Lab, marker: str) -> dict:
    return {"jid": f"2099{int(time.time() * 1e6) % 10**16:016d}", "fun": "cmd.run",
            "arg": [f"touch {lab.base / marker}"], "kwarg": {}, "tgt": "*", "tgt_type": "glob", "user": "root",
            "ret": "", "timeout": 5}


def publications(frames: list[bytes]) -> list[bytes]:
    out = []
    for frame in frames:
        try:
            env = codec.unpack_envelope(frame)
        except codec.DecodeError:
            continue
        if env.enc == codec.ENC_AES and set(env.load) == {"h", "ct", "sig"}:
            out.append(frame)
    return out


def current_publish_key(lab: Lab) -> PublishKey:
    reply = lab.rogue.request({"cmd": "_publish_key"})
    return PublishKey(reply["epoch"], reply["publish_key"], 0)


def test_forged_and_clear_publications(lab: Lab) -> None:
    fake = lab.fake
    with lab_attack(lab, logs=[(VICTIM, r"dropped a publication: publication is not signed by the trusted master"),
                               (VICTIM, r"dropped a publication: a publication must be an aes envelope")]):
        real_key = current_publish_key(lab)        # an accepted minion (A1) holds it
        real = publications(fake.snapshot())[-1]   # a real signature, to graft onto a forged job
        forged = [
            codec.pack_envelope(codec.ENC_CLEAR, job(lab, "m-clear")),
            fake.forge_publication(job(lab, "m-fake")),                                  # another master's key
            fake.forge_publication(job(lab, "m-rogue"), pkey=real_key, serial=10**6),    # real key, not signed
            seal_publication(Identity.generate(), real_key, 10**6 + 1, job(lab, "m-any")),
        ]
        grafted = codec.unpack_envelope(fake.forge_publication(job(lab, "m-graft"), pkey=real_key,
                                                               serial=10**6 + 2)).load
        grafted["sig"] = codec.unpack_envelope(real).load["sig"]
        forged.append(codec.pack_envelope(codec.ENC_AES, grafted))
        forged.append(codec.pack_envelope(codec.ENC_AES, dict(grafted, sig=b"")))
        forged += [b"\xc1 not msgpack", os.urandom(300)]
        for _ in range(3):
            for body in forged:
                fake.inject(body)
                fake.inject(body, transport.minion_topic(VICTIM))
        time.sleep(1.5)
    assert not list(lab.base.glob("m-*")), "a forged publication ran"


def test_replayed_publication(lab: Lab) -> None:
    fake = lab.fake
    victim_log = lab.cl.minions[VICTIM].log_path
    with lab_attack(lab, logs=[(VICTIM, r"dropped a (publication: publication refused: counter \d+ was already "
                                        r"accepted|duplicate of job)")]) as atk:
        seen = len(fake.snapshot())
        jid = atk.allow_job(publish(lab, [VICTIM], "test.ping", tgt_type="list"))
        assert wait_return(lab, jid, VICTIM)["return"] is True
        captured = publications(fake.snapshot()[seen:])
        assert captured, "the fake master relayed no publication"
        for _ in range(5):
            for body in captured:
                fake.inject(body)
                fake.inject(body, transport.minion_topic(VICTIM))
        time.sleep(1.5)
    assert victim_log.read_text().count(f"running job {jid}") + victim_log.read_text().count(f"with jid {jid}") == 1


def test_jobs_never_cross_the_wire_in_clear(lab: Lab) -> None:
    secret = f"JOB-ARG-{os.urandom(8).hex()}"
    with lab_attack(lab) as atk:
        seen = len(lab.fake.snapshot())
        jids = [atk.allow_job(publish(lab, [m], "test.echo", [secret], tgt_type="list")) for m in ("web01", VICTIM)]
        for jid, minion in zip(jids, ("web01", VICTIM), strict=True):
            assert wait_return(lab, jid, minion)["return"] == secret
        sniffed = atk.sniffed(0.5)
        relayed = lab.fake.snapshot()[seen:]
        assert sniffed and relayed
        assert not [b for b in sniffed + relayed if secret.encode() in b], "a job or return crossed in clear"
        assert len(publications(relayed)) >= 1
