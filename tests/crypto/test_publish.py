"""Publications: signed by the master, sealed per epoch, replay-checked; rotation cuts old keys off."""

from __future__ import annotations

import pytest

from runtime import codec
from runtime.crypt import aead
from runtime.crypt.errors import BadMessage, NeedPublishKey, PublicationRefused
from runtime.crypt.handshake import now_ms
from runtime.crypt.identity import Identity
from runtime.crypt.publish import PublicationReceiver, PublishKey, seal_publication


def flip_byte(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1:]


@pytest.fixture
def setup():
    master = Identity.generate()
    pkey = PublishKey.generate(1)
    return master, pkey, PublicationReceiver(master.public_raw, pkey)


def refusal(receiver, data) -> str:
    with pytest.raises(PublicationRefused) as err:
        receiver.open(data)
    return err.value.reason


def test_round_trip(setup):
    master, pkey, receiver = setup
    job = {"fun": "test.ping", "jid": "20261122000000000000", "tgt": "*"}
    pub = receiver.open(seal_publication(master, pkey, 1, job))
    assert (pub.epoch, pub.serial, pub.payload) == (1, 1, job)


def test_every_byte_of_header_ciphertext_and_signature_is_checked(setup):
    master, pkey, receiver = setup
    data = seal_publication(master, pkey, 1, {"fun": "test.ping"})
    load = codec.unpack_envelope(data).load
    for field in ("h", "ct", "sig"):
        for index in range(len(load[field])):
            bad = codec.pack_envelope("aes", dict(load, **{field: flip_byte(load[field], index)}))
            assert refusal(receiver, bad) == "bad_signature"
    assert receiver.open(data).payload == {"fun": "test.ping"}


def test_replayed_serial_refused(setup):
    master, pkey, receiver = setup
    data = seal_publication(master, pkey, 7, {"n": 1})
    receiver.open(data)
    assert refusal(receiver, data) == "replayed"


def test_stale_publication_refused(setup):
    master, pkey, receiver = setup
    data = seal_publication(master, pkey, 1, {}, now=now_ms() - 3_600_000)
    assert refusal(receiver, data) == "stale"


def test_accepted_minion_cannot_forge_even_with_the_publish_key(setup):
    _, pkey, receiver = setup
    rogue = Identity.generate()  # holds the publish key like every accepted minion, signs with its own key
    assert refusal(receiver, seal_publication(rogue, pkey, 1, {"fun": "cmd.run"})) == "bad_signature"


def test_clear_publication_refused(setup):
    _, _, receiver = setup
    assert refusal(receiver, codec.pack_envelope("clear", {"fun": "cmd.run", "arg": ["id"]})) == "malformed"


def test_rotation_makes_the_old_epoch_key_useless(setup):
    master, old, receiver = setup
    new = PublishKey.generate(2)
    later = seal_publication(master, new, 1, {"fun": "secret.job"})
    # a minion still holding only epoch 1 (e.g. one whose key was deleted) learns nothing:
    with pytest.raises(NeedPublishKey) as err:
        receiver.open(later)
    assert err.value.epoch == 2
    # and even forcing the old key onto the new epoch's ciphertext fails authentication
    load = codec.unpack_envelope(later).load
    with pytest.raises(BadMessage):
        aead.open_sealed(old.key, aead.DOMAIN_PUB, 1, load["ct"], load["h"])
    # a minion that got the new key reads it, and from then on refuses the old epoch
    assert receiver.update_key(new)
    assert receiver.open(later).payload == {"fun": "secret.job"}
    assert refusal(receiver, seal_publication(master, old, 5, {"fun": "old"})) == "stale_epoch"
    assert not receiver.update_key(old)


def test_serial_window_restarts_with_the_epoch(setup):
    master, _, receiver = setup
    new = PublishKey.generate(2)
    receiver.update_key(new)
    assert receiver.open(seal_publication(master, new, 1, {})).serial == 1


def test_publication_under_a_forged_epoch_number_with_the_current_key(setup):
    master, pkey, receiver = setup
    # the signature covers the header, so a relabelled epoch is caught before anything else
    data = seal_publication(master, PublishKey(5, pkey.key, pkey.created_ms), 1, {})
    with pytest.raises(NeedPublishKey):
        receiver.open(data)  # correctly signed by the master under epoch 5: fetch, not fail


def test_clock_offset(setup):
    master, pkey, _ = setup
    receiver = PublicationReceiver(master.public_raw, pkey, clock_offset_ms=3_600_000)
    data = seal_publication(master, pkey, 1, {}, now=now_ms() + 3_600_000)
    assert receiver.open(data).serial == 1


def test_oversized_or_garbage_frames_are_decode_errors(setup):
    _, _, receiver = setup
    with pytest.raises(codec.DecodeError):
        receiver.open(b"\xc1garbage")
    small = PublicationReceiver(setup[0].public_raw, setup[1], limits=codec.Limits(max_size=100))
    with pytest.raises(codec.DecodeError) as err:
        small.open(seal_publication(setup[0], setup[1], 1, {"x": "y" * 200}))
    assert err.value.reason == "too_large"


def test_adopt_after_reauth_keeps_the_window_for_the_same_key(setup):
    master, pkey, receiver = setup
    data = seal_publication(master, pkey, 1, {"jid": "1"})
    receiver.open(data)
    receiver.adopt(PublishKey(pkey.epoch, pkey.key, pkey.created_ms))   # re-auth, same epoch and key
    assert refusal(receiver, data) == "replayed"
    restarted = PublishKey.generate(1)                                  # master state wiped: epoch 1 again
    receiver.adopt(restarted)
    assert refusal(receiver, data) == "bad_tag"                         # old capture no longer opens
    assert receiver.open(seal_publication(master, restarted, 1, {"jid": "2"})).payload == {"jid": "2"}


def test_publication_from_before_the_session_is_refused_by_a_fresh_receiver():
    """A minion that restarted (fresh serial window) must not run a recent job again."""
    master, pkey = Identity.generate(), PublishKey.generate(1)
    began = now_ms()
    old = seal_publication(master, pkey, 7, {"fun": "cmd.run"}, now=began - 5_000)
    fresh = PublicationReceiver(master.public_raw, pkey, not_before_ms=began)
    assert refusal(fresh, old) == "before_session"
    assert fresh.open(seal_publication(master, pkey, 8, {"fun": "test.ping"}, now=began + 1)).serial == 8
    # re-authenticating onto a new key (a restarted master) moves the floor to that session
    receiver = PublicationReceiver(master.public_raw, pkey)
    assert receiver.open(old).serial == 7
    newer = PublishKey.generate(1)
    receiver.adopt(newer, not_before_ms=began)
    assert refusal(receiver, seal_publication(master, newer, 7, {}, now=began - 1)) == "before_session"
