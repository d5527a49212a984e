"""Which master a minion talks to: Salt's ``master``, ``master_type``, ``random_master``,
``master_failback`` and ``master_failback_interval`` (docs/failover.md).

- ``master_type: str`` (Salt's default): one master.  A list in ``master`` uses its first address
  (saltpan has no hot multi-master; a warning says so).
- ``master_type: failover``: ``master`` is a list (a single address is a list of one, as in
  Salt).  The minion holds one session at a time, with the first master that answers; when its
  master stops answering (no auth reply, heartbeats missed for ``master_alive_interval``) it moves
  to the next one, and after the last one back to the first.  ``random_master`` shuffles the list
  at start, keeping the first master first when ``master_failback`` is on.  With
  ``master_failback``, a minion that is not with the first master tries it again every
  ``master_failback_interval`` seconds and moves back as soon as it answers.

An entry may be ``host`` or ``host:port`` (the port then replaces ``master_port``, as in Salt).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime import transport
from runtime.config import ConfigError, option

log = logging.getLogger("saltpan.minion.masters")

MASTER_TYPES = ("str", "failover")


@dataclass(frozen=True)
class Master:
    """One master's addresses."""

    host: str
    ret_port: int
    publish_port: int
    source: str = ""            # Salt's source_address, source_ret_port, source_publish_port
    source_ret_port: int = 0
    source_publish_port: int = 0

    @property
    def ret_address(self) -> str:
        return transport.tcp_address_from(self.source, self.source_ret_port, self.host, self.ret_port)

    @property
    def pub_address(self) -> str:
        return transport.tcp_address_from(self.source, self.source_publish_port, self.host, self.publish_port)

    def __str__(self) -> str:
        return f"{self.host}:{self.ret_port}"


def parse_master(entry: object, opts: Mapping[str, Any]) -> Master:
    """``host`` or ``host:port`` (an IPv4 address or a name), or ConfigError naming the entry."""
    where = opts.get("conf_file") or "config"
    if not isinstance(entry, str) or not entry.strip():
        raise ConfigError(f"{where}: option 'master': each address must be a non-empty string, got {entry!r}")
    host, port = entry.strip(), option(opts, "master_port", int)
    if host.count(":") == 1:
        host, _, port_text = host.partition(":")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"{where}: option 'master': {entry!r} has no valid port after ':'")
        port = int(port_text)
    source = option(opts, "source_address", str)
    try:
        transport.tcp_address(host, port)
    except transport.AddressError as exc:
        raise ConfigError(f"{where}: option 'master': {exc}") from None
    master = Master(host, port, option(opts, "publish_port", int), source, option(opts, "source_ret_port", int),
                    option(opts, "source_publish_port", int))
    try:
        master.ret_address  # noqa: B018 - validates the source address and ports
        master.pub_address  # noqa: B018
    except transport.AddressError as exc:
        raise ConfigError(f"{where}: option 'source_address' / 'source_ret_port' / 'source_publish_port': "
                          f"{exc}") from None
    return master


class MasterList:
    """The masters in the order the minion tries them, and which one it is with."""

    def __init__(self, masters: list[Master], *, failover: bool, failback: bool) -> None:
        self.masters = masters
        self.failover = failover and len(masters) > 1
        self.failback = failback and self.failover
        self.index = 0

    @classmethod
    def from_opts(cls, opts: Mapping[str, Any], rng: random.Random | None = None) -> MasterList:
        where = opts.get("conf_file") or "config"
        kind = option(opts, "master_type", str)
        if kind not in MASTER_TYPES:
            raise ConfigError(f"{where}: option 'master_type' must be one of {', '.join(MASTER_TYPES)}, got "
                              f"{kind!r} (saltpan has no 'func', 'disable' or 'distributed' masters)")
        raw = opts.get("master")
        entries = raw if isinstance(raw, list) else [raw if raw is not None else option(opts, "master", str)]
        if not entries:
            raise ConfigError(f"{where}: option 'master' is an empty list")
        masters = [parse_master(entry, opts) for entry in entries]
        failback = option(opts, "master_failback", bool)
        if kind == "str":
            if len(masters) > 1:
                log.warning("%s: 'master' lists %d masters but master_type is 'str': using %s only (saltpan has "
                            "no hot multi-master; set master_type: failover to use the others when it fails)",
                            where, len(masters), masters[0])
            return cls(masters[:1], failover=False, failback=False)
        if option(opts, "random_master", bool):
            shuffler = rng or random.Random()
            rest = masters[1:] if failback else masters
            shuffler.shuffle(rest)
            masters = [masters[0], *rest] if failback else rest
        return cls(masters, failover=True, failback=failback)

    @property
    def current(self) -> Master:
        return self.masters[self.index]

    @property
    def top(self) -> Master:
        return self.masters[0]

    def unreachable(self) -> Master:
        """The current master did not answer: with failover, move on to the next one (after the
        last, the first again).  Returns the master to try next."""
        if self.failover:
            failed = self.current
            self.index = (self.index + 1) % len(self.masters)
            log.warning("master %s does not answer; trying the next master of the list, %s", failed, self.current)
        return self.current

    def failback_due(self) -> bool:
        """Whether the minion should keep trying to return to the first master."""
        return self.failback and self.index != 0

    def back_to_top(self) -> Master:
        self.index = 0
        return self.current

    def failback_interval(self, opts: Mapping[str, Any], heartbeat_s: float) -> float:
        """Salt: master_failback_interval, else master_alive_interval (here: else 3 heartbeats)."""
        return (option(opts, "master_failback_interval", float) or option(opts, "master_alive_interval", float)
                or 3 * heartbeat_s)
