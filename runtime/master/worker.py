"""MWorker: answers every request the ReqServer hands it.

Dispatch is an explicit allow-list (SECURITY.md class 1):

* clear loads: ``_auth`` (anyone), ``publish`` and ``job_returns`` (a local user proving
  it holds its client key);
* aes loads (sealed under a minion's session): the commands in ``Worker.AES_COMMANDS``, always
  acting for the minion id bound to the session, never an id named in the load.

Anything else gets a clear error reply; a malformed message never crashes the worker.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import zmq

from compiler import match
from runtime import codec, transport
from runtime import jid as jid_mod
from runtime.crypt.channel import ServerChannel
from runtime.crypt.clientkey import client_key_path, load_client_key, verify_proof
from runtime.crypt.errors import CryptoError, KeyFileError
from runtime.crypt.identity import Identity
from runtime.crypt.publish import seal_publication
from runtime.events import MASTER_PREFIXES, EventPusher
from runtime.master import acl as acl_mod
from runtime.master import fileserver, targeting
from runtime.master.auth import AuthService, AuthSettings
from runtime.master.datacache import DataTooLarge, SQLiteDataCache
from runtime.master.event_size import bound_event
from runtime.master.jobcache import SQLiteJobCache
from runtime.master.keys import FileKeyStore
from runtime.master.sessions import SQLiteSessionStore
from runtime.ratelog import RateLimitedLog

log = logging.getLogger("saltpan.master.worker")

WORKERS_IPC = "workers.ipc"
PUBLISH_PULL = "publish_pull.ipc"
MAX_EVENTS_PER_REQUEST = 100
PILLAR_OVERRIDES = ("pillar_override", "ext", "extra_minion_data")   # never honoured from a minion


class Refused(Exception):
    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class Worker:
    """State of one MWorker process."""

    # The dispatch allow-lists (SECURITY.md class 1): wire command -> method name.  Nothing else
    # is ever looked up by name; tests/security/test_allowlist.py fails when a public method is
    # neither here nor in NON_HANDLERS.
    CLEAR_COMMANDS: ClassVar[Mapping[str, str]] = MappingProxyType({
        "_auth": "handle_auth",          # anyone
        "publish": "publish",            # a local user proving it holds its client key
        "job_returns": "job_returns",    # idem
    })
    AES_COMMANDS: ClassVar[Mapping[str, str]] = MappingProxyType({   # sealed, id from the session
        "_heartbeat": "heartbeat",
        "_publish_key": "publish_key",
        "_return": "job_return",
        "_pillar": "pillar",
        "_grains": "grains",
        "_minion_event": "minion_event",
        "_file_envs": "file_envs",
        "_file_list": "file_list",
        "_dir_list": "dir_list",
        "_file_find": "file_find",
        "_file_hash": "file_hash",
        "_serve_file": "serve_file",
    })
    # Public methods that are not request handlers: plumbing and helpers of the handlers.
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset({
        "handle", "handle_clear", "handle_aes", "new_jid", "send_publication", "expected_minions", "files", "close",
    })

    def __init__(self, opts: dict[str, Any], identity: Identity, ctx: zmq.Context):
        self.opts = opts
        self.identity = identity
        self.ctx = ctx
        self.sock_dir = opts["sock_dir"]
        self.keys = FileKeyStore(opts["pki_dir"], max_pending=int(opts.get("max_pending_keys", 1000)))
        self.store = SQLiteSessionStore.in_sock_dir(self.sock_dir)
        self.auth = AuthService(identity, self.keys, self.store, AuthSettings(
            auto_accept=bool(opts.get("auto_accept")), heartbeat_s=float(opts.get("heartbeat_period", 5.0))))
        self.channel = ServerChannel(self.store)
        self.jobs = SQLiteJobCache(opts["cachedir"])
        self.data = SQLiteDataCache(opts["cachedir"], still_known=lambda m: bool(self.store.minion_sessions(m)),
                                    max_size=int(opts.get("max_minion_data_size", 1024 * 1024)))
        self.events = EventPusher(ctx, self.sock_dir)
        self.publish_sock = transport.make_socket(ctx, zmq.PUSH)
        self.publish_sock.connect(transport.ipc_address(self.sock_dir, PUBLISH_PULL))
        self.refusals = RateLimitedLog(log, float(opts.get("refusal_log_interval", 60.0)))
        self.master_user = _current_user()
        self._pillar = None
        self._files = None
        # bound handlers, built only from the allow-lists above
        self.aes_handlers: dict[str, Callable[[str, dict], Any]] = {
            cmd: getattr(self, name) for cmd, name in self.AES_COMMANDS.items()}
        self.clear_handlers: dict[str, Callable[[str, dict], Any]] = {
            cmd: getattr(self, name) for cmd, name in self.CLEAR_COMMANDS.items()}

    # -- entry point --------------------------------------------------------------
    def handle(self, peer: str, body: bytes) -> bytes:
        try:
            envelope = codec.unpack_envelope(body)
        except codec.DecodeError as exc:
            self.refusals.warning(f"decode:{exc.reason}", "refused request from %s: %s", peer, exc)
            return codec.pack_envelope(codec.ENC_CLEAR, codec.error_load(exc.reason, str(exc)))
        if envelope.enc == codec.ENC_AES:
            return self.handle_aes(peer, envelope.load)
        return self.handle_clear(peer, envelope.load)

    def handle_clear(self, peer: str, load: dict) -> bytes:
        cmd = load.get("cmd")
        handler = self.clear_handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is None:
            self.refusals.warning("clear:unknown", "refused clear command %r from %s (unknown_command)",
                                  str(cmd)[:64], peer)
            return _clear(codec.error_load("unknown_command", "unknown command"))
        try:
            return _clear(handler(peer, load))
        except Refused as exc:
            self.refusals.warning(f"clear:{cmd}:{exc.reason}", "refused %s from %s (%s): %s", cmd, peer, exc.reason,
                                  exc.message)
            return _clear(codec.error_load(exc.reason, exc.message))
        except (CryptoError, codec.DecodeError) as exc:
            self.refusals.warning(f"clear:{cmd}:{exc.reason}", "refused %s from %s (%s): %s", cmd, peer, exc.reason,
                                  exc)
            return _clear(codec.error_load(exc.reason, str(exc)))
        except Exception:  # noqa: BLE001 - a bug must not take the worker down
            log.exception("clear command %s from %s failed", cmd, peer)
            return _clear(codec.error_load("internal_error", "the master could not process the request"))

    def handle_aes(self, peer: str, load: dict) -> bytes:
        try:
            request = self.channel.open_request(load)
        except (CryptoError, codec.DecodeError) as exc:
            self.refusals.warning(f"aes:{exc.reason}", "refused sealed request from %s (%s): %s", peer, exc.reason,
                                  exc)
            return _clear(codec.error_load(exc.reason, str(exc)))
        payload = request.payload
        cmd = payload.get("cmd") if isinstance(payload, dict) else None
        handler = self.aes_handlers.get(cmd) if isinstance(cmd, str) else None
        minion_id = request.minion_id
        named = payload.get("id", minion_id) if isinstance(payload, dict) else minion_id
        if handler is None:
            self.refusals.warning("aes:unknown", "refused command %r from minion %s (unknown_command)",
                                  str(cmd)[:64], minion_id)
            reply: Any = codec.error_load("unknown_command", "unknown command")
        elif named != minion_id:
            # Salt refuses a load whose id is not the authenticated one ("Request id mismatch"): a
            # minion asking in another's name gets an error, never the other's data.
            self.refusals.warning(f"aes:{cmd}:id_mismatch", "refused %s from minion %s (id_mismatch): naming id %r",
                                  cmd, minion_id, str(named)[:64])
            reply = codec.error_load("id_mismatch", "the request names another minion id than its session's")
        else:
            try:
                reply = handler(minion_id, payload)
            except (Refused, fileserver.FileServerError, DataTooLarge) as exc:
                self.refusals.warning(f"aes:{cmd}:{exc.reason}", "refused %s from minion %s (%s): %s", cmd,
                                      minion_id, exc.reason, exc.message)
                reply = codec.error_load(exc.reason, exc.message)
            except Exception:  # noqa: BLE001
                log.exception("%s from minion %s failed", cmd, minion_id)
                reply = codec.error_load("internal_error", "the master could not process the request")
        return self.channel.seal_reply(request, reply)

    # -- clear commands ---------------------------------------------------------------
    def handle_auth(self, peer: str, load: dict) -> Any:
        decision = self.auth.handle(load)
        if decision.outcome == "accepted":
            log.info(decision.log_line())
        else:
            # pending/rejected/denied once per id (bounded by the key store); refusals once per
            # reason, whatever the id, so a flood of new ids cannot flood the log
            who = decision.minion_id if decision.outcome in ("pending", "rejected", "denied") else "*"
            self.refusals.info(f"auth:{decision.outcome}:{decision.reason}:{who}", "%s (from %s)",
                               decision.log_line(), peer)
        event = decision.event()
        if event is not None:
            self.events.fire("salt/auth", event)
        return decision.reply

    def _client_user(self, load: dict) -> tuple[str, bytes]:
        body = load.get("body")
        proof = load.get("proof")
        if not isinstance(body, bytes) or not isinstance(proof, dict) or not isinstance(proof.get("user"), str):
            raise Refused("bad_proof", "a client request needs body and proof")
        user = proof["user"]
        try:
            key = load_client_key(client_key_path(self.opts["cachedir"], user))
        except (KeyFileError, ValueError):
            raise Refused("bad_proof", f"no client key for user {user!r}") from None
        verified_user, nonce = verify_proof(key, proof, body, not_before_ms=self.store.started_ms())
        if not self.store.claim_nonce("client", nonce, int(time.time() * 1000) + 300_000):
            raise Refused("replayed", "client request replayed")
        return verified_user, body

    def publish(self, peer: str, load: dict) -> dict:
        user, body = self._client_user(load)
        job = codec.unpack(body, codec.Limits(max_size=4 * 1024 * 1024, max_items=100_000, max_depth=32))
        if not isinstance(job, dict):
            raise Refused("bad_job", "a publish body must be a map")
        fun, tgt, tgt_type = job.get("fun"), job.get("tgt"), job.get("tgt_type", "glob")
        arg, kwarg = job.get("arg", []), job.get("kwarg", {})
        if not acl_mod.valid_function_name(fun):
            raise Refused("bad_job", f"function {fun!r} is not a single module.function name")
        if not isinstance(arg, list) or not isinstance(kwarg, dict) or not isinstance(tgt_type, str):
            raise Refused("bad_job", "arg must be a list, kwarg a map and tgt_type a string")
        if not isinstance(tgt, (str, list)) or (isinstance(tgt, list) and not all(isinstance(t, str) for t in tgt)):
            raise Refused("bad_job", "tgt must be a string or a list of strings")
        try:
            minions = self.expected_minions(tgt, tgt_type)
        except match.MatchError as exc:
            raise Refused("bad_target", exc.message) from None
        if not minions:
            raise Refused("no_minions", "No minions matched the target. No command was sent, no jid was assigned.")
        if user != self.master_user and not self._asks_about_own_job(user, fun, arg, minions):
            reason = acl_mod.check(self.opts.get("publisher_acl") or {}, user, fun, minions)
            if reason is not None:
                raise Refused("acl", reason)
        jid = self.new_jid(fun, arg, tgt, tgt_type, user, minions)
        payload = {"jid": jid, "fun": fun, "arg": arg, "kwarg": kwarg, "tgt": tgt, "tgt_type": tgt_type,
                   "user": user, "ret": str(job.get("ret") or ""), "timeout": int(job.get("timeout") or 5)}
        restricted = user != self.master_user
        if restricted:
            # Minions match targets with their own data and config (nodegroups, grains, pillar),
            # which may differ from what the master checked the ACL against: a restricted user's
            # job may run only on the minions the ACL was checked for, and is sent only to them.
            payload["acl_minions"] = list(minions)
        self.events.fire(f"salt/job/{jid}/new", {"jid": jid, "tgt": tgt, "tgt_type": tgt_type, "fun": fun,
                                                 "arg": arg, "minions": minions, "user": user})
        self.send_publication(payload, minions if tgt_type == "list" or restricted else None)
        log.info("published %s %s to %s (%d minions expected) for %s", jid, fun, tgt, len(minions), user)
        return {"jid": jid, "minions": minions}

    def _asks_about_own_job(self, user: str, fun: str, arg: list, minions: list[str]) -> bool:
        """``saltutil.find_job JID`` on minions of a job this same user published: how the
        client learns that a job outlasting --timeout is still running, allowed whatever the
        user's publisher_acl says (it reveals nothing but that job's state)."""
        if fun != "saltutil.find_job" or len(arg) != 1 or not isinstance(arg[0], str):
            return False
        job = self.jobs.job(arg[0])
        return job is not None and job["user"] == user and set(minions) <= set(job["minions"])

    def new_jid(self, fun: str, arg: list, tgt: Any, tgt_type: str, user: str, minions: list[str]) -> str:
        for _ in range(100):
            jid = jid_mod.new_jid()
            if self.jobs.job(jid) is None:
                self.jobs.add_job(jid, fun, arg, tgt, tgt_type, user, minions)
                return jid
        raise Refused("busy", "could not allocate a job id")

    def send_publication(self, payload: dict, only: list[str] | None) -> None:
        pkey, serial = self.store.next_publication()
        body = seal_publication(self.identity, pkey, serial, payload)
        topics = [transport.minion_topic(m) for m in only] if only else [transport.BROADCAST]
        for topic in topics:
            self.publish_sock.send_multipart([topic, body])

    def expected_minions(self, tgt: Any, tgt_type: str) -> list[str]:
        accepted = self.keys.list_keys().get("minions", [])
        return targeting.expected_minions(tgt, tgt_type, accepted, self.data.view("grains"), self.data.view("pillar"),
                                          self.opts.get("nodegroups") or {})

    def job_returns(self, peer: str, load: dict) -> dict:
        user, body = self._client_user(load)
        request = codec.unpack(body, codec.HEADER_LIMITS)
        jid = request.get("jid") if isinstance(request, dict) else None
        job = self.jobs.job(jid) if isinstance(jid, str) else None
        if job is None or (user != self.master_user and job["user"] != user):
            raise Refused("unknown_job", "no such job for this user")
        return {"jid": jid, "minions": job["minions"], "returns": self.jobs.returns(jid)}

    # -- aes commands ---------------------------------------------------------------
    def heartbeat(self, minion_id: str, load: dict) -> dict:
        held = load.get("epoch")
        current = self.store.current_publish_key()
        reply: dict[str, Any] = {"now": int(time.time() * 1000), "heartbeat": float(self.opts.get("heartbeat_period",
                                                                                                   5.0)),
                                 "epoch": current.epoch, "publish_key": None}
        if held != current.epoch:
            sessions = self.store.minion_sessions(minion_id)
            if sessions:
                pkey = self.store.publish_key_for(sessions[-1])
                reply["epoch"], reply["publish_key"] = pkey.epoch, pkey.key
        return reply

    def publish_key(self, minion_id: str, load: dict) -> dict:
        sessions = self.store.minion_sessions(minion_id)
        if not sessions:
            raise Refused("unknown_session", "no session")
        pkey = self.store.publish_key_for(sessions[-1])
        return {"epoch": pkey.epoch, "publish_key": pkey.key}

    def job_return(self, minion_id: str, load: dict) -> dict:
        jid = load.get("jid")
        job = self.jobs.job(jid) if isinstance(jid, str) else None
        if job is None:
            raise Refused("unknown_job", "no such job")
        if minion_id not in job["minions"] and not self._greedy_target(job, minion_id):
            raise Refused("not_targeted", f"job {jid} was not sent to {minion_id}")
        success = bool(load.get("success", True))
        retcode = load.get("retcode", 0)
        retcode = retcode if isinstance(retcode, int) and not isinstance(retcode, bool) else 0
        fun = load.get("fun") if isinstance(load.get("fun"), str) else job["fun"]
        if not self.jobs.add_return(jid, minion_id, fun, load.get("return"), success, retcode):
            raise Refused("duplicate", f"{minion_id} already returned for {jid}")
        event = {"cmd": "_return", "id": minion_id, "jid": jid, "fun": fun, "fun_args": job["arg"],
                 "return": load.get("return"), "retcode": retcode, "success": success}
        if isinstance(load.get("out"), str):
            event["out"] = load["out"]
        self.events.fire(f"salt/job/{jid}/ret/{minion_id}", event)
        return {"ok": True}

    def _greedy_target(self, job: dict, minion_id: str) -> bool:
        try:
            return minion_id in self.expected_minions(job["tgt"], job["tgt_type"])
        except match.MatchError:
            return False

    def grains(self, minion_id: str, load: dict) -> dict:
        grains = load.get("grains")
        if not isinstance(grains, dict):
            raise Refused("bad_grains", "grains must be a map")
        grains = dict(grains)
        grains["id"] = minion_id
        self.data.store(minion_id, "grains", grains)
        return {"ok": True}

    def pillar(self, minion_id: str, load: dict) -> dict:
        from runtime.master import pillar_service

        ignored = sorted(field for field in PILLAR_OVERRIDES if field in load)
        if ignored:  # Salt's _pillar load could carry these to ext_pillar; here they are dropped (class 11)
            self.refusals.warning("aes:_pillar:override", "ignored %s in _pillar from minion %s (override): a minion "
                                  "cannot change what its pillar is compiled from", ", ".join(ignored), minion_id)
        grains = load.get("grains")
        if isinstance(grains, dict):
            self.grains(minion_id, load)
        else:
            grains = self.data.fetch(minion_id, "grains") or {}
        saltenv = load.get("saltenv") if isinstance(load.get("saltenv"), str) else None
        pillarenv = load.get("pillarenv") if isinstance(load.get("pillarenv"), str) else None
        if self._pillar is None:
            self._pillar = pillar_service.PillarService(self.opts, self.data)
        return {"pillar": self._pillar.compile(minion_id, dict(grains), saltenv, pillarenv,
                                               clean_cache=load.get("clean_cache") is True)}

    def minion_event(self, minion_id: str, load: dict) -> dict:
        events = load.get("events")
        if not isinstance(events, list) or len(events) > MAX_EVENTS_PER_REQUEST:
            raise Refused("bad_event", f"events must be a list of at most {MAX_EVENTS_PER_REQUEST}")
        fired = 0
        for event in events:
            if not isinstance(event, dict) or not isinstance(event.get("tag"), str) or not isinstance(
                    event.get("data", {}), dict):
                continue
            tag = event["tag"]
            if not tag or len(tag) > 512 or tag.startswith(MASTER_PREFIXES):
                self.refusals.warning(f"event:{minion_id}", "refused event tag %r from minion %s (master_tag)", tag[:80],
                                      minion_id)
                continue
            data = bound_event(dict(event.get("data") or {}), int(self.opts.get("max_event_size", 1048576)))
            if data is None:   # larger than max_event_size even trimmed as Salt trims
                self.refusals.warning(f"event:{minion_id}:too_large", "dropped event %r from minion %s (too_large): "
                                      "larger than max_event_size even trimmed", tag[:80], minion_id)
                continue
            data["id"] = minion_id
            self.events.fire(tag, data)
            fired += 1
        return {"ok": True, "fired": fired}

    # -- file server --------------------------------------------------------------
    def files(self) -> fileserver.FileServer:
        if self._files is None:
            self._files = fileserver.FileServer(self.opts.get("file_roots") or {},
                                                float(self.opts.get("refusal_log_interval", 60.0)))
        return self._files

    def file_envs(self, minion_id: str, load: dict) -> dict:
        return {"envs": self.files().envs()}

    def file_list(self, minion_id: str, load: dict) -> dict:
        return {"files": self.files().file_list(load.get("saltenv"), load.get("prefix") or "")}

    def dir_list(self, minion_id: str, load: dict) -> dict:
        return {"dirs": self.files().dir_list(load.get("saltenv"), load.get("prefix") or "")}

    def file_find(self, minion_id: str, load: dict) -> dict:
        return self.files().find(load.get("path"), load.get("saltenv"))

    def file_hash(self, minion_id: str, load: dict) -> dict:
        return self.files().hash(load.get("path"), load.get("saltenv"))

    def serve_file(self, minion_id: str, load: dict) -> dict:
        return self.files().serve(load.get("path"), load.get("saltenv"), load.get("loc", 0))

    def close(self) -> None:
        for closer in (self.jobs.close, self.data.close, self.store.close, self.events.close):
            try:
                closer()
            except Exception:  # noqa: BLE001
                pass
        self.publish_sock.close(linger=0)


def _clear(load: Mapping[str, Any]) -> bytes:
    return codec.pack_envelope(codec.ENC_CLEAR, dict(load))


def _current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def run(opts: dict[str, Any], identity: Identity, index: int, stop: threading.Event | None = None) -> None:
    """MWorker process body: one request at a time from the ReqServer (workers.ipc) until SIGTERM."""
    stop = stop or threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ctx = zmq.Context()
    worker = Worker(opts, identity, ctx)
    sock = transport.WorkerSocket(ctx, transport.ipc_address(opts["sock_dir"], WORKERS_IPC))
    log.debug("worker %d ready", index)
    try:
        while not stop.is_set():
            request = sock.recv(200)
            if request is None:
                continue
            if not request.rid:
                sock.reply(request, _clear(codec.error_load("malformed", "malformed request")))
                continue
            sock.reply(request, worker.handle(request.peer, request.body))
    finally:
        worker.close()
        sock.close()
        ctx.term()
