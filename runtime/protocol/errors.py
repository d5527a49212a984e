"""Every error token the master answers with: the ``reason`` of ``{"error": {"reason", "message"}}``
replies and of signed auth refusals.

A refusal is always one of these tokens, and the master logs it once per kind and
``refusal_log_interval``; the message beside it is a sentence for people, never parsed.  The
table of docs/protocol.md §2 is generated from :data:`ERRORS` (``docs/gen_protocol.py``), and
tests fail when code refuses with a token that is not here (``tests/security/test_error_tokens.py``
reads every refusal written in runtime/; the fuzzers check every reply they get).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType


@dataclasses.dataclass(frozen=True)
class ErrorToken:
    token: str
    stage: str      # where the request was refused (see STAGES)
    meaning: str    # what it means and what the sender should do


STAGES = {
    "proxy": "the request proxy, before any worker sees the request",
    "decode": "decoding the body (`runtime/codec.py`), for every request",
    "dispatch": "the worker's dispatch, before the message's handler",
    "sealed": "opening a sealed request (`runtime/crypt/channel.py`): a minion re-authenticates on these",
    "auth": "the `reason` of a signed auth refusal (`outcome: refused`), or an unsigned error for a hello too "
            "malformed to sign for",
    "client": "`publish` / `job_returns` of local users",
    "handler": "a sealed request's handler",
    "event": "one event of a `_minion_event` batch, left off the bus (the reply's `fired` counts the others); "
             "logged, not answered",
    "any": "any request",
}

_TOKENS = (
    # the proxy
    ErrorToken("rate_limited", "proxy", "the sender's address (or, for a verified local user, the user) sent more "
               "clear requests than `clear_rate_per_peer` allows: retry later"),
    ErrorToken("busy", "proxy", "the queue of the sender's class or flow is full (a minion, a user or an address "
               "asking for more than its share), a hello waited 3 s (admission, §1), or the global hello "
               "bucket `clear_rate_global` is empty; also a job id that could not be allocated: retry later "
               "(a hello's carries `retry_s`, §6.1)"),
    # decoding
    ErrorToken("too_large", "decode", "the body is over `max_message_size`; from a handler: data over "
               "`max_minion_data_size` (grains, pillar) that was not stored"),
    ErrorToken("too_long", "decode", "a container declares more items than allowed"),
    ErrorToken("too_deep", "decode", "containers nested deeper than allowed"),
    ErrorToken("ext_type", "decode", "a msgpack extension type (timestamps included)"),
    ErrorToken("bad_key", "decode", "a map key that is not a string, bytes or an integer; in a hello: a "
               "small-order or non-canonical Ed25519 key (`bad_key` as the auth refusal's reason)"),
    ErrorToken("duplicate_key", "decode", "a map holding the same key twice"),
    ErrorToken("malformed", "decode", "not msgpack, truncated, trailing bytes, invalid UTF-8; a sealed load or a "
               "hello without exactly its fields; a message field of the wrong type"),
    ErrorToken("bad_envelope", "decode", "not `{\"enc\": \"clear\"|\"aes\", \"load\": map}`"),
    # dispatch
    ErrorToken("unknown_command", "dispatch", "`cmd` is not a command of the protocol for this envelope (a clear "
               "command sealed, a method name, a dunder, not a string)"),
    ErrorToken("id_mismatch", "dispatch", "a sealed payload's `id` names another minion than its session's"),
    # sealed requests
    ErrorToken("unsupported_version", "sealed", "a protocol version this master does not speak (also a hello's)"),
    ErrorToken("bad_tag", "sealed", "the ciphertext does not authenticate under the session's key"),
    ErrorToken("unknown_session", "sealed", "the session is not (or no longer) known: authenticate again"),
    ErrorToken("replayed", "sealed", "a counter, hello nonce or client-proof nonce already used"),
    ErrorToken("too_old", "sealed", "a counter too far behind the newest of the session's window"),
    ErrorToken("stale", "sealed", "a timestamp too old (120 s for requests and client proofs), or a client proof "
               "made before the master started"),
    ErrorToken("future", "sealed", "a timestamp too far in the future"),
    # auth
    ErrorToken("clock_skew", "auth", "the hello's timestamp is over 300 s from the master's clock or before the "
               "master started; the reply carries the master's time: correct the offset and retry at once"),
    ErrorToken("bad_signature", "auth", "the hello's signature does not verify with the key it carries"),
    ErrorToken("invalid_id", "auth", "the minion id cannot name a key file (`/`, `\\`, NUL, control characters, "
               "`.`, `..`, over 255 bytes, a `.tmp-` prefix)"),
    ErrorToken("pending_full", "auth", "`max_pending_keys` keys already wait for acceptance: nothing was stored"),
    ErrorToken("key_store_error", "auth", "a corrupt or planted file in the key store for this id (logged)"),
    ErrorToken("revoked", "auth", "the key was deleted or rejected while the session was being made"),
    ErrorToken("bad_ephemeral_key", "auth", "the hello's X25519 key gives an all-zero shared secret"),
    # local clients
    ErrorToken("bad_proof", "client", "the client proof does not verify (no key for that user, a wrong MAC, "
               "fields of the wrong shape)"),
    ErrorToken("bad_job", "client", "the publish body is not a job: a function that is not one `module.function`, "
               "`arg`/`kwarg`/`tgt`/`ret` of the wrong type, `kwarg` keys that are not strings, a `timeout` that "
               "is not a number of seconds (nothing is written)"),
    ErrorToken("bad_target", "client", "the target does not parse, or its type is unknown"),
    ErrorToken("no_minions", "client", "the target matches no accepted minion: no jid was assigned"),
    ErrorToken("acl", "client", "`publisher_acl` does not allow this user this function on every minion targeted"),
    ErrorToken("bad_backend", "client", "a `fileserver_update` body that is not a map of backend names and remote "
               "patterns, or a backend not in `fileserver_backend` or not configured"),
    ErrorToken("unknown_job", "client", "no such job for this user; from a minion: a return for a jid that does "
               "not exist"),
    # sealed handlers
    ErrorToken("not_targeted", "handler", "a return for a job that was not sent to this minion"),
    ErrorToken("duplicate", "handler", "a second return of this minion for this job"),
    ErrorToken("bad_grains", "handler", "`grains` is not a map"),
    ErrorToken("bad_mine", "handler", "a mine request whose data is not a map of function names, or whose target, "
               "function or target type is not a string (or a list of strings)"),
    ErrorToken("bad_event", "handler", "`events` is not a list of at most 100 events"),
    ErrorToken("bad_path", "handler", "a file-server path that is not a string, or a `loc` outside the file"),
    ErrorToken("bad_saltenv", "handler", "a saltenv that is not a string or not a valid name"),
    ErrorToken("unknown_saltenv", "handler", "no `file_roots` for that saltenv"),
    ErrorToken("access_denied", "handler", "a path outside `file_roots` (`..`, absolute, backslashes, NUL, a "
               "symlink leading out); the message names no master path"),
    # events
    ErrorToken("reserved_tag", "event", "a tag in the master's namespaces (`salt/` except `salt/minion/<own id>/` "
               "and `salt/beacon/<own id>/`, a job id), however written: case, doubled, leading or trailing "
               "slashes, backslashes, blanks, invisible or look-alike characters"),
    ErrorToken("invalid_tag", "event", "an empty tag, one over 512 characters, or one holding control characters"),
    # anything
    ErrorToken("internal_error", "any", "the master failed on a request it should have refused or served: a bug, "
               "logged with its traceback once per kind and `refusal_log_interval`"),
)

ERRORS: Mapping[str, ErrorToken] = MappingProxyType({error.token: error for error in _TOKENS})
assert len(ERRORS) == len(_TOKENS), "an error token is listed twice"
assert all(error.stage in STAGES for error in _TOKENS)

# What a minion decides about a master's reply on its own: never sent by the master, listed so
# that every token anyone logs is documented.
MINION_SIDE: Mapping[str, str] = MappingProxyType({
    "unexpected_clear": "a clear reply to a sealed request",
    "wrong_session": "a sealed reply of another session",
    "wrong_request": "a sealed reply to another request",
    "bad_master_key": "the master's key in an auth reply is small-order or non-canonical (never remembered)",
    "stale_epoch": "a publication under a publish key older than the minion's",
    "before_session": "a publication older than the session that gave the minion its serial window",
    "unsigned_refusal": "an unsigned error in answer to a hello (acted on only as \"this hello failed\")",
})


def documented(reason: str) -> bool:
    """True when ``reason`` is one of the master's error tokens."""
    return reason in ERRORS
