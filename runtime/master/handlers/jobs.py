"""Jobs and their returns: ``publish`` and ``job_returns`` from local clients, ``_return`` from minions.

Publish policy lives here: the client's proof, the expected minions, ``publisher_acl``, the job
id, the ``salt/job/<jid>/new`` event, and the signed publication pushed to the Publisher.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import zmq

from compiler import match
from runtime import jid as jid_mod
from runtime import protocol, transport
from runtime.config import option
from runtime.crypt.publish import seal_publication
from runtime.events import EventPusher
from runtime.master import acl as acl_mod
from runtime.master import targeting
from runtime.master.datacache import DataCache
from runtime.master.handlers.context import Refused, WorkerContext
from runtime.master.jobcache import JobCache, ReturnRow
from runtime.master.keys import KeyStore
from runtime.master.spool import ReturnSpool
from runtime.master.store.errors import StoreUnavailable

log = logging.getLogger("saltpan.master.worker")


TOPICS_MAX = 100   # list targets up to this many minions go to their topics only; longer: one broadcast


class JobHandlers:
    HANDLES: ClassVar[Mapping[type[protocol.Request[Any]], str]] = MappingProxyType({
        protocol.Publish: "publish",          # a local user proving it holds its client key
        protocol.JobReturns: "job_returns",   # idem
        protocol.JobReturn: "job_return",     # sealed: the minion id comes from the session
    })
    # public methods that are not request handlers
    NON_HANDLERS: ClassVar[frozenset[str]] = frozenset({"new_jid", "send_publication", "share_publication",
                                                        "expected_minions", "job_return_many"})

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self._targeted = _TargetedCache()

    # -- local clients ----------------------------------------------------------------
    def _client_user(self, request: protocol.Publish | protocol.JobReturns) -> str:
        """The user whose client key made the request's proof (each proof is accepted once)."""
        return self.ctx.client_user(request.proof, request.body)

    def publish(self, peer: str, request: protocol.Publish) -> protocol.PublishReply:
        ctx = self.ctx
        user = self._client_user(request)
        job = protocol.PublishJob.decode(request.body)
        try:
            minions = self.expected_minions(job.tgt, job.tgt_type)
        except match.MatchError as exc:
            raise Refused("bad_target", exc.message) from None
        if not minions:
            raise Refused("no_minions", "No minions matched the target. No command was sent, no jid was assigned.")
        restricted = user != ctx.master_user
        if restricted and not self._asks_about_own_job(user, job.fun, job.arg, minions):
            reason = acl_mod.check(option(ctx.opts, "publisher_acl", dict), user, job.fun, minions)
            if reason is not None:
                raise Refused("acl", reason)
        # the job cache and events show keyword arguments as Salt does: a last {"__kwarg__": True, ...}
        shown_arg = [*job.arg, {"__kwarg__": True, **job.kwarg}] if job.kwarg else list(job.arg)
        jid = self.new_jid(job.fun, shown_arg, job.tgt, job.tgt_type, user, minions)
        payload: dict[str, Any] = {"jid": jid, "fun": job.fun, "arg": job.arg, "kwarg": job.kwarg, "tgt": job.tgt,
                                   "tgt_type": job.tgt_type, "user": user, "ret": job.ret, "timeout": job.timeout}
        if restricted:
            # Minions match targets with their own data and config (nodegroups, grains, pillar),
            # which may differ from what the master checked the ACL against: a restricted user's
            # job may run only on the minions the ACL was checked for, and is sent only to them.
            payload["acl_minions"] = list(minions)
        ctx.events.fire(f"salt/job/{jid}/new", {"jid": jid, "tgt": job.tgt, "tgt_type": job.tgt_type, "fun": job.fun,
                                                "arg": shown_arg, "minions": minions, "user": user})
        only = minions if job.tgt_type == "list" or restricted else None
        self.send_publication(payload, only)
        self.share_publication(payload, only)
        log.info("published %s %s to %s (%d minions expected) for %s", jid, job.fun, job.tgt, len(minions), user)
        return protocol.PublishReply(jid=jid, minions=minions)

    def _asks_about_own_job(self, user: str, fun: str, arg: list[Any], minions: list[str]) -> bool:
        """``saltutil.find_job JID`` on minions of a job this same user published: how the
        client learns that a job outlasting --timeout is still running, allowed whatever the
        user's publisher_acl says (it reveals nothing but that job's state)."""
        if fun != "saltutil.find_job" or len(arg) != 1 or not isinstance(arg[0], str):
            return False
        job = self.ctx.jobs.job(arg[0])
        return job is not None and job["user"] == user and set(minions) <= set(job["minions"])

    def new_jid(self, fun: str, arg: list[Any], tgt: str | list[str], tgt_type: str, user: str,
                minions: list[str]) -> str:
        for _ in range(100):
            jid = jid_mod.new_jid()
            if self.ctx.jobs.add_job(jid, fun, arg, tgt, tgt_type, user, minions):   # False: jid taken
                return jid
        raise Refused("busy", "could not allocate a job id")

    def send_publication(self, payload: dict[str, Any], only: list[str] | None) -> None:
        """Seal and sign the job, push it to the Publisher (to ``only``'s topics, or to all).

        ``only`` longer than ``TOPICS_MAX`` is broadcast once instead: one message per minion
        through the Publisher's queue (1,000 deep) failed for a list of thousands, and a minion
        outside the list runs nothing either way (list targets match its id; ``acl_minions``
        is checked by the minion, docs/protocol.md)."""
        pkey, serial = self.ctx.sessions.next_publication()
        body = seal_publication(self.ctx.identity, pkey, serial, payload)
        if only and len(only) <= TOPICS_MAX:
            topics = [transport.minion_topic(m) for m in only]
        else:
            topics = [transport.BROADCAST]
        try:
            for topic in topics:
                self.ctx.publish_sock.send_multipart([topic, body])
        except zmq.Again:
            raise Refused("busy", "the master's publisher is not keeping up: try again") from None

    def share_publication(self, payload: dict[str, Any], only: list[str] | None) -> None:
        """For the other masters sharing the store, to send to their minions (``runtime.master.cluster``);
        the job is in the job cache already, so a failure here is logged, not refused."""
        try:
            ctx = self.ctx
            ctx.changes.record("publish", {"payload": payload, "only": only}, ctx.master_id)
        except StoreUnavailable as exc:
            self.ctx.refusals.warning("publish:share", "job %s not sent to the other masters' minions: %s",
                                      payload.get("jid"), exc.message)

    def expected_minions(self, tgt: str | list[str], tgt_type: str) -> list[str]:
        return expected_minions(self.ctx.keys, self.ctx.data, self.ctx.opts, tgt, tgt_type)

    def job_returns(self, peer: str, request: protocol.JobReturns) -> protocol.JobReturnsReply:
        user = self._client_user(request)
        query = protocol.JobQuery.decode(request.body)
        job = self.ctx.jobs.job(query.jid)
        if job is None or (user != self.ctx.master_user and job["user"] != user):
            raise Refused("unknown_job", "no such job for this user")
        return protocol.JobReturnsReply(jid=query.jid, minions=job["minions"],
                                        returns=self.ctx.jobs.returns(query.jid))

    # -- minions ----------------------------------------------------------------------
    def job_return(self, minion_id: str, ret: protocol.JobReturn) -> protocol.Ok:
        refused = self.job_return_many([(minion_id, ret)])[0]
        if refused is not None:
            raise refused
        return protocol.Ok()

    def job_return_many(self, returns: Sequence[tuple[str, protocol.JobReturn]]) -> list[Exception | None]:
        """``_return`` for several minions' returns at once (a worker handed them together), stored
        with one commit: for each, None (stored, or kept on this master while the job cache is
        unreachable) or the exception its reply reports."""
        ctx = self.ctx
        try:
            return list(record_returns(ctx.jobs, ctx.events, self._greedy_target, returns, self._targeted))
        except StoreUnavailable as exc:
            unavailable = exc
        outcome: list[Exception | None] = []
        for minion_id, ret in returns:   # none was stored: each is kept here if the spool can
            if ctx.spool.keep(minion_id, ret):
                ctx.refusals.warning("aes:_return:spooled", "return of %s for %s kept on this master until the "
                                     "job cache is back: %s", minion_id, ret.jid, unavailable.message)
                outcome.append(None)
            else:
                outcome.append(unavailable)
        return outcome

    def _greedy_target(self, job: dict[str, Any], minion_id: str) -> bool:
        return greedy_target(self.ctx.keys, self.ctx.data, self.ctx.opts, job, minion_id)


def expected_minions(keys: KeyStore, data: DataCache, opts: dict[str, Any], tgt: str | list[str],
                     tgt_type: str) -> list[str]:
    """The accepted minions ``tgt`` reaches, by their cached grains and pillar."""
    return targeting.expected_minions(tgt, tgt_type, keys.list_keys().get("minions", []), data.view("grains"),
                                      data.view("pillar"), option(opts, "nodegroups", dict))


def greedy_target(keys: KeyStore, data: DataCache, opts: dict[str, Any], job: dict[str, Any],
                  minion_id: str) -> bool:
    """A minion the master did not expect, which its own data made match (Salt's greedy targets)."""
    try:
        return minion_id in expected_minions(keys, data, opts, job["tgt"], job["tgt_type"])
    except match.MatchError:
        return False


def record_return(jobs: JobCache, events: EventPusher, greedy: Callable[[dict[str, Any], str], bool],
                  minion_id: str, ret: protocol.JobReturn, targeted: _TargetedCache | None = None) -> None:
    """Store a minion's return and fire ``salt/job/<jid>/ret/<id>``: only for a job sent to that
    minion (or one its own data made it match), and only the first return (``Refused`` else)."""
    refused = record_returns(jobs, events, greedy, [(minion_id, ret)], targeted)[0]
    if refused is not None:
        raise refused


def record_returns(jobs: JobCache, events: EventPusher, greedy: Callable[[dict[str, Any], str], bool],
                   returns: Sequence[tuple[str, protocol.JobReturn]],
                   targeted: _TargetedCache | None = None) -> list[Refused | None]:
    """:func:`record_return` for several returns, stored with one transaction: for each, None
    (stored, its event fired) or why it was refused.  Raises what the job cache raises (then
    none of them was stored)."""
    outcome: list[Refused | None] = [None] * len(returns)
    rows: list[tuple[int, ReturnRow, protocol.JobReturn, dict[str, Any]]] = []
    for index, (minion_id, ret) in enumerate(returns):
        jid = ret.jid
        cached = targeted.get(jid) if targeted is not None else None
        if cached is None:
            found = jobs.job(jid)
            if found is None:
                outcome[index] = Refused("unknown_job", "no such job")
                continue
            cached = targeted.put(jid, found) if targeted is not None else (found, frozenset(found["minions"]))
        job, minions = cached
        if minion_id not in minions and not greedy(job, minion_id):
            outcome[index] = Refused("not_targeted", f"job {jid} was not sent to {minion_id}")
            continue
        fun = ret.fun if ret.fun is not None else job["fun"]
        rows.append((index, ReturnRow(jid, minion_id, fun, ret.ret, ret.success, ret.retcode), ret, job))
    stored = jobs.add_returns([row for _, row, _, _ in rows]) if rows else []
    for (index, row, ret, job), new in zip(rows, stored, strict=True):
        if not new:
            outcome[index] = Refused("duplicate", f"{row.minion} already returned for {row.jid}")
            continue
        event = {"cmd": "_return", "id": row.minion, "jid": row.jid, "fun": row.fun, "fun_args": job["arg"],
                 "return": ret.ret, "retcode": ret.retcode, "success": ret.success}
        if ret.out is not None:
            event["out"] = ret.out
        events.fire(f"salt/job/{row.jid}/ret/{row.minion}", event)
    return outcome


def drain_spool(spool: ReturnSpool, jobs: JobCache, events: EventPusher,
                greedy: Callable[[dict[str, Any], str], bool], limit: int = 500) -> tuple[int, list[str]]:
    """Hand kept returns (``runtime.master.spool``) to the job cache: (how many were stored,
    why the others were refused).  Stops at ``StoreUnavailable``, keeping the rest."""
    stored, refused, handled = 0, [], []
    for entry, minion_id, ret in spool.take(limit):
        try:
            record_return(jobs, events, greedy, minion_id, ret)
            stored += 1
        except Refused as exc:
            refused.append(f"{minion_id} for {ret.jid}: {exc.reason}")
        except StoreUnavailable:
            break
        handled.append(entry)
    spool.done(handled)
    return stored, refused


class _TargetedCache:
    """Per worker: the last jobs returns arrived for, with their expected minions as a set.

    A job to 10,000 minions brings 10,000 returns; reading its row (and decoding its list of
    10,000 minion ids) for each return made the returns of one job cost O(n²).  A job's row never
    changes once published, so it is read once per worker; entries expire after ``TTL`` seconds
    (a job pruned from the cache meanwhile is not kept alive by this one) and at most ``SIZE`` are kept.
    """

    SIZE = 64
    TTL = 120.0

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, tuple[float, dict[str, Any], frozenset[str]]] = OrderedDict()

    def get(self, jid: str) -> tuple[dict[str, Any], frozenset[str]] | None:
        hit = self._jobs.get(jid)
        if hit is None:
            return None
        if time.monotonic() - hit[0] > self.TTL:
            del self._jobs[jid]
            return None
        self._jobs.move_to_end(jid)
        return hit[1], hit[2]

    def put(self, jid: str, job: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
        targeted = frozenset(job["minions"])
        self._jobs[jid] = (time.monotonic(), job, targeted)
        while len(self._jobs) > self.SIZE:
            self._jobs.popitem(last=False)
        return job, targeted
