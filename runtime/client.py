"""LocalClient: publish a job through the master and gather the returns.

The client proves it holds its user's client key (``cachedir/.<user>_key``),
subscribes to the master's event bus *before* publishing, and yields returns as
they arrive.  When the timeout passes it asks the missing minions whether they
are still running the job (``saltutil.find_job``) and keeps waiting for those
that are, as Salt does; the others are reported as not returned.  A user who
cannot read the event bus (publisher_acl users) polls the job cache instead.
"""

from __future__ import annotations

import os
import pwd
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from runtime import codec, protocol, transport
from runtime.config import option
from runtime.crypt.clientkey import client_key_path, load_client_key, make_proof
from runtime.crypt.errors import KeyFileError
from runtime.events import EventListener


class ClientError(Exception):
    pass


@dataclass
class JobResult:
    jid: str
    minions: list[str]
    returns: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def _user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


class LocalClient:
    def __init__(self, opts: dict[str, Any], user: str | None = None, timeout: float = 10.0):
        self.opts = opts
        self.user = user or _user()
        host = opts.get("interface") or "127.0.0.1"
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        self.address = transport.tcp_address(host, option(opts, "ret_port", int))
        self.request_timeout = timeout
        path = client_key_path(opts["cachedir"], self.user)
        try:
            self.key = load_client_key(path)
        except (KeyFileError, OSError, ValueError) as exc:
            raise ClientError(f"cannot read the client key {path}: {exc} (only the master's user and "
                              "publisher_acl users can publish)") from None
        # kept from one job to the next (as Salt's LocalClient keeps its event subscription): a
        # connection to the request port, and a subscription to the bus that no job is reading now
        self._requests: transport.RequestClient | None = None
        self._idle_listener: EventListener | None = None
        self._lock = threading.Lock()   # jobs may run from several threads at once
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True     # a job still running in another thread closes its own at its end
            requests, self._requests = self._requests, None
            listener, self._idle_listener = self._idle_listener, None
        if requests is not None:
            requests.close()
        if listener is not None:
            listener.close()

    def __enter__(self) -> LocalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _clear_request(self, request: type[protocol.Publish] | type[protocol.JobReturns]
                       | type[protocol.FileserverUpdate],
                       body: protocol.PublishJob | protocol.JobQuery | protocol.UpdateQuery,
                       timeout: float | None = None) -> Any:
        try:
            packed = body.encode()
        except codec.EncodeError as exc:
            raise ClientError(f"the job's arguments cannot be sent: {exc}") from None

        def make() -> tuple[None, bytes]:   # a new proof (and nonce) for each attempt
            proof = protocol.ClientProof.from_wire(make_proof(self.key, self.user, packed))
            return None, protocol.encode_clear(request(body=packed, proof=proof))

        with self._lock:
            if self._requests is None:
                self._requests = transport.RequestClient(self.address, timeout=self.request_timeout, tries=2)
            requests = self._requests
        try:
            _, reply = requests.request_with(make, timeout=timeout or self.request_timeout)
        except transport.RequestTimeout as exc:
            raise ClientError(f"the master at {self.address} did not answer: {exc}") from None
        try:
            load = codec.unpack_envelope(reply).load
            if isinstance(load.get("error"), dict):
                err = protocol.ErrorReply.from_wire(load)
                raise ClientError(f"the master refused: {err.message} ({err.reason})")
            return request.REPLY.from_wire(load)
        except (codec.DecodeError, protocol.ProtocolError) as exc:
            raise ClientError(f"the master at {self.address} sent a malformed reply: {exc}") from None

    def publish(self, tgt: str | list[str], fun: str, arg: list[Any] | None = None,
                kwarg: dict[str, Any] | None = None, tgt_type: str = "glob", timeout: int = 5) -> protocol.PublishReply:
        """Publish a job; the reply names its jid and the minions expected to return."""
        job = protocol.PublishJob(tgt=tgt, fun=fun, arg=list(arg or []), kwarg=dict(kwarg or {}), tgt_type=tgt_type,
                                  ret="", timeout=int(timeout))
        reply: protocol.PublishReply = self._clear_request(protocol.Publish, job)
        return reply

    def job_returns(self, jid: str) -> protocol.JobReturnsReply:
        reply: protocol.JobReturnsReply = self._clear_request(protocol.JobReturns, protocol.JobQuery(jid=jid))
        return reply

    def fileserver_update(self, backends: list[str], remotes: list[str],
                          timeout: float) -> protocol.FileserverUpdateReply:
        """Have the master fetch the git remotes of these backends now (all configured ones when empty);
        timeout: seconds to wait for the master, which fetches before it answers."""
        reply: protocol.FileserverUpdateReply = self._clear_request(
            protocol.FileserverUpdate, protocol.UpdateQuery(backends=backends, remotes=remotes), timeout)
        return reply

    def listener(self) -> EventListener | None:
        sock_dir = self.opts["sock_dir"]
        # a publisher_acl user cannot reach sock_dir (0700): it polls the job cache instead
        if not os.access(os.path.join(sock_dir, "master_event_pub.ipc"), os.R_OK | os.W_OK):
            return None
        listener = EventListener(sock_dir, "salt/job/")
        if not listener.wait_connected(sock_dir, 2.0):
            listener.close()
            return None
        return listener

    def _take_listener(self) -> EventListener | None:
        """The kept subscription, checked live again (an echo through the bus, well under a
        millisecond on a connected socket) with what queued while no job read it dropped; a new
        one when it is in use (a job asking its minions whether they still run it) or not live."""
        with self._lock:
            listener, self._idle_listener = self._idle_listener, None
        if listener is not None:
            listener.drain()
            if listener.wait_connected(self.opts["sock_dir"], 2.0):
                return listener
            listener.close()
        return self.listener()

    def _give_back(self, listener: EventListener | None) -> None:
        if listener is None:
            return
        with self._lock:
            if self._idle_listener is None and not self._closed:
                self._idle_listener, listener = listener, None
        if listener is not None:
            listener.close()

    def cmd_iter(self, tgt: Any, fun: str, arg: list | None = None, kwarg: dict | None = None,
                 tgt_type: str = "glob", timeout: float = 5.0,
                 gather_job_timeout: float = 3.0) -> Iterator[tuple[str, dict[str, Any]] | JobResult]:
        """Yield (minion, return event) as returns arrive, then the final JobResult."""
        listener = self._take_listener()
        try:
            published = self.publish(tgt, fun, arg, kwarg, tgt_type, int(timeout))
            jid, minions = published.jid, list(published.minions)
            result = JobResult(jid, minions)
            pending = set(minions)
            deadline = time.monotonic() + timeout
            checked_running = False
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if checked_running or gather_job_timeout <= 0:
                        break
                    still = self.still_running(jid, sorted(pending), gather_job_timeout)
                    checked_running = not still
                    if still:
                        deadline = time.monotonic() + timeout
                        continue
                    break
                for minion, ret in self._next_returns(listener, jid, min(remaining, 0.5)):
                    if minion in result.returns:
                        continue
                    result.returns[minion] = ret
                    pending.discard(minion)
                    yield minion, ret
            result.missing = sorted(pending)
            yield result
        finally:
            self._give_back(listener)

    def _next_returns(self, listener: EventListener | None, jid: str,
                      wait: float) -> list[tuple[str, dict[str, Any]]]:
        if listener is None:
            time.sleep(min(wait, 0.2))
            reply = self.job_returns(jid)
            return [(m, {"id": m, "jid": jid, **r}) for m, r in reply.returns.items()]
        event = listener.get(wait)
        out = []
        while event is not None:
            tag, data = event
            if tag.startswith(f"salt/job/{jid}/ret/") and isinstance(data.get("id"), str):
                out.append((data["id"], data))
            event = listener.get(0.0)
        return out

    def still_running(self, jid: str, minions: list[str], gather_timeout: float) -> bool:
        """Ask the missing minions whether they still run jid (saltutil.find_job)."""
        try:
            found = self.cmd(minions, "saltutil.find_job", [jid], tgt_type="list", timeout=gather_timeout,
                             check_running=False)
        except ClientError:
            return False
        return any(isinstance(r.get("return"), dict) and r["return"] for r in found.returns.values())

    def cmd(self, tgt: Any, fun: str, arg: list | None = None, kwarg: dict | None = None, tgt_type: str = "glob",
            timeout: float = 5.0, check_running: bool = True) -> JobResult:
        """Run a job and return every result (blocking)."""
        final: JobResult | None = None
        gather = 3.0 if check_running else 0.0
        iterator = self.cmd_iter(tgt, fun, arg, kwarg, tgt_type, timeout, gather)
        for item in iterator:
            if isinstance(item, JobResult):
                final = item
        assert final is not None
        if not check_running:
            return final
        return final
