"""The assertions every attack shares, as one context manager::

    with lab_attack(lab, logs=[("master", r"refused clear command")]) as atk:
        reply = atk.raw().clear({"cmd": "__init__"})
        assert reason(reply) == "unknown_command"

While the block runs, a thread pings ``web01`` (the legit round trip), an honest minion
(``probe01``, tests/security/probe.py) times each of its own requests one after the other (a
heartbeat, a file hash, its pillar), and a listener records every event on the master bus; a
sniffer counts publications.  When the block ends without an exception, :meth:`Attack.verify`
checks, in order:

1. the legit round trip worked during the attack and works after it (web01 and db01), and the
   honest minion's requests were all answered, 95 % of them within ``max_probe_s`` (measured
   while the attack loads the master, not before or after);
2. no job was published or run except those pings (job cache, publications seen on the
   publish port, job lines in every minion's log);
3. no canary appears in any reply the attack recorded, any event, any new log line, any
   return, any frame the fake master relayed or any publication;
4. nothing was written outside the job cache and the logs (the lab directory, which holds the
   master's and minions' root_dirs and the roots, snapshotted before and after);
5. every master process is still the same process (none crashed), and its RSS and open file
   descriptors stayed bounded;
6. the key store is byte-for-byte unchanged (unless the attack is a legit key operation);
7. each expected refusal was logged, with its reason, and no more than once per process per
   ``refusal_log_interval`` (rate-limited);
8. the master logged no traceback and answered no ``internal_error``: hostile input is refused
   with a documented token, never by tripping over it (unless the attack declares otherwise).
"""

from __future__ import annotations

import fnmatch
import math
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.events import EventListener
from tests.integration.rogue import Sniffer
from tests.security.canary import leaks
from tests.security.clients import RawClient
from tests.security.lab import (
    ACCEPTED,
    PENDING,
    PROBE,
    REFUSAL_LOG_INTERVAL,
    REJECTED,
    WORKERS,
    Lab,
    PingResult,
    proc_stat,
)
from tests.security.probe import HonestProbe, ProbeResult

JOB_LINE = re.compile(r"running job (\d{20})|with jid (\d{20})")
MAX_RSS_GROWTH_KIB = 40 * 1024        # per master process, per attack
MAX_FD_GROWTH = 24                    # per master process, per attack
DEFAULT_MAX_PING_S = 5.0              # the machine is shared; the flood test holds pings to 2 s
# a ping is given max_ping_s to gather its return; one answered just before that shows a few tens
# of ms more on the test's clock (the client's own wind-down): it was not slow (one read 5.02 s)
PING_WIND_DOWN_S = 0.25
DEFAULT_MAX_PROBE_S = 2.0             # 95th percentile of the honest minion's requests during an attack
_last_end = [0.0]


@dataclass
class Expect:
    """A refusal that must be logged: ``who`` is "master" or a minion id; ``pattern`` a regex."""

    who: str
    pattern: str


@dataclass
class Attack:
    lab: Lab
    logs: list[tuple[str, str]] = field(default_factory=list)
    keys_change: bool = False
    allowed_writes: Sequence[str] = ()
    max_ping_s: float = DEFAULT_MAX_PING_S
    ping_victim_after: bool = False
    extra_jobs_ok: bool = False
    tracebacks_ok: bool = False
    max_probe_s: float = DEFAULT_MAX_PROBE_S
    recorded: list[tuple[str, Any]] = field(default_factory=list)
    pings: list[PingResult] = field(default_factory=list)
    events: list[tuple[str, dict]] = field(default_factory=list)
    allowed_jids: set[str] = field(default_factory=set)

    # -- recording ---------------------------------------------------------------------------
    def record(self, where: str, obj: Any) -> Any:
        self.recorded.append((where, obj))
        return obj

    def expect_log(self, who: str, pattern: str) -> None:
        """Also require a log line matching ``pattern`` in ``who``'s log (decided during the attack)."""
        self.logs.append((who, pattern))

    def allow_job(self, jid: str) -> str:
        """A job the test itself published (legit), which may be published and run."""
        self.allowed_jids.add(jid)
        return jid

    def ping(self, minion_id: str, timeout: float = 3.0) -> bool:
        """A legit ping of any minion, made by the test (its job is allowed)."""
        result = self.lab.ping(minion_id, timeout)
        if result.jid:
            self.allowed_jids.add(result.jid)
        return result.ok

    def sniffed(self, seconds: float = 0.5) -> list[bytes]:
        """Publications the sniffer saw so far (waiting at most ``seconds`` for more)."""
        out = []
        deadline = time.monotonic() + seconds
        while (pub := self.sniffer.next(max(0.0, deadline - time.monotonic()))) is not None:
            out.append(pub[1])
            if time.monotonic() >= deadline:
                break
        return out

    def raw(self, source: str | None = None) -> RawClient:
        client = RawClient(self.lab.cl.ret_port, source=source, record=self.record)
        self._closers.append(client.close)
        return client

    # -- before -------------------------------------------------------------------------------
    def begin(self) -> None:
        self._closers: list[Any] = []
        wait = _last_end[0] + REFUSAL_LOG_INTERVAL + 0.1 - time.monotonic()
        if wait > 0:  # a refusal of the previous attack must not hide this one's log line
            time.sleep(wait)
        lab = self.lab
        lab.ensure_rogue()
        self.t0 = time.time()
        self.started = time.monotonic()
        self.log_offsets = {p: p.stat().st_size for p in lab.log_files()}
        self.snapshot = _snapshot(lab.base)
        self.data_cache = _data_cache_rows(lab)
        self.key_store = lab.key_store()
        self.procs = {pid: (name, proc_stat(pid)) for pid, name in lab.master_processes().items()}
        self.fake_seen = len(lab.fake.snapshot()) if lab.fake else 0
        self.sniffer = Sniffer(lab.cl.publish_port)
        self.listener = EventListener(lab.sock_dir(), "")
        assert self.listener.wait_connected(lab.sock_dir(), 5), "event bus listener did not connect"
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._listen, daemon=True),
                         threading.Thread(target=self._ping_loop, daemon=True)]
        for thread in self._threads:
            thread.start()
        assert lab.probe_minion is not None
        self.probe = HonestProbe(lab.probe_minion).start()

    def _listen(self) -> None:
        while not self._stop.is_set():
            event = self.listener.get(0.1)
            if event is not None:
                self.events.append(event)

    def _ping_loop(self) -> None:
        while not self._stop.is_set():
            self.pings.append(self.lab.ping("web01", timeout=self.max_ping_s))
            self._stop.wait(0.3)

    # -- after ------------------------------------------------------------------------------------
    def end(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.max_ping_s + 5)
        self.probed = self.probe.stop() if hasattr(self, "probe") else ProbeResult()
        for closer in self._closers:
            closer()
        self.duration = time.monotonic() - self.started

    def close(self) -> None:
        self.listener.close()
        self.sniffer.close()
        _last_end[0] = time.monotonic()

    def verify(self) -> None:
        lab = self.lab
        # 1. the honest minion's own requests and the legit round trip, during and after
        probed = self.probed
        assert probed.latencies, "the honest minion made no request during the attack"
        assert not probed.failures, f"the honest minion's requests failed during the attack: {probed.failures[:5]}"
        assert probed.percentile(95) <= self.max_probe_s, f"the honest minion was slow: {probed.summary()}"
        assert self.pings, "no ping ran during the attack"
        failed = [p for p in self.pings if not p.ok or p.seconds > self.max_ping_s + PING_WIND_DOWN_S]
        assert not failed, f"legit test.ping failed or was slow during the attack: {failed}"
        after = [lab.ping(m) for m in ACCEPTED]
        if self.ping_victim_after:
            from tests.security.lab import VICTIM
            after.append(lab.ping(VICTIM, timeout=10))
        assert all(p.ok for p in after), f"legit test.ping failed after the attack: {after}"
        self.pings += after
        ping_jids = {p.jid for p in self.pings if p.jid} | self.allowed_jids
        time.sleep(0.3)  # let the last publications and events land
        publications = self.sniffed(0.2)
        events = list(self.events)

        # 2. no job published or run, other than the pings
        jobs = _jobs_since(lab, self.t0)
        if not self.extra_jobs_ok:
            extra = {jid: fun for jid, fun in jobs.items() if jid not in ping_jids}
            assert not extra, f"jobs published during the attack: {extra}"
            assert len(publications) <= len(ping_jids), \
                f"{len(publications)} publications for {len(ping_jids)} pings"
        new_logs = self._new_logs()
        for path, text in new_logs.items():
            ran = {a or b for a, b in JOB_LINE.findall(text)}
            if path.stem in (PENDING, REJECTED):
                assert not ran, f"{path.stem} (not accepted) ran jobs {ran}"
            if not self.extra_jobs_ok:
                assert ran <= ping_jids, f"{path.name} ran jobs other than the pings: {ran - ping_jids}"

        # 3. no canary anywhere an attacker could look
        returns = _returns(lab, list(jobs))
        fake_frames = lab.fake.snapshot()[self.fake_seen:] if lab.fake else []
        sources: list[tuple[str, Any]] = list(self.recorded)
        sources += [(f"event {tag}", data) for tag, data in events]
        sources += [(f"log {p.name}", text) for p, text in new_logs.items()]
        sources += [(f"return {jid}/{minion}", ret) for (jid, minion), ret in returns.items()]
        sources += [("frame through the fake master", frame) for frame in fake_frames]
        sources += [("publication", body) for body in publications]
        leaked = leaks(lab.canaries, sources)
        assert not leaked, f"canary leaked: {leaked}"

        # 4. nothing written outside the job cache and logs
        changed = _diff(self.snapshot, _snapshot(lab.base))
        allowed = [*_always_allowed(lab), *self.allowed_writes]
        if self.keys_change:  # a legit key operation writes the key store, and only it
            allowed.append(f"{Path(lab.opts['pki_dir']).relative_to(lab.base)}/*")
        unexpected = [path for path in changed if not any(fnmatch.fnmatchcase(path, pat) for pat in allowed)]
        assert not unexpected, f"files written or changed outside the job cache and logs: {unexpected}"
        # the data cache's files change with the honest probe's own pillar: its rows for every other
        # minion must not, unless the attack declared data-cache writes
        cache_db = f"{Path(lab.opts['cachedir']).relative_to(lab.base)}/minion_data.sqlite"
        if not any(fnmatch.fnmatchcase(cache_db, pat) for pat in self.allowed_writes):
            rows = _data_cache_rows(lab)
            moved = sorted(key for key in {*rows, *self.data_cache} if rows.get(key) != self.data_cache.get(key))
            assert not moved, f"the minion data cache changed during the attack: {moved}"

        # 5. master processes alive, bounded memory and descriptors
        self._check_processes()

        # 6. key store
        if not self.keys_change:
            assert lab.key_store() == self.key_store, "the key store changed"

        # 7. refusals logged with their reason, rate-limited
        for who, pattern in self.logs:
            text = "".join(t for p, t in new_logs.items() if p.name == f"{who}.log")
            count = len(re.findall(pattern, text))
            procs = WORKERS + 2 if who == "master" else 1   # workers, ReqServer, file server in a worker
            bound = procs * (1 + math.ceil(self.duration / REFUSAL_LOG_INTERVAL))
            assert count >= 1, f"{who} did not log a refusal matching {pattern!r}"
            assert count <= bound, f"{who} logged {count} lines matching {pattern!r} in {self.duration:.1f} s " \
                                   f"(rate limit allows {bound})"

        # 8. no traceback, no internal_error
        if not self.tracebacks_ok:
            master_log = "".join(t for p, t in new_logs.items() if p.name == "master.log")
            assert "Traceback" not in master_log and "internal_error" not in master_log, \
                "the master logged a traceback or an internal_error during the attack:\n" + master_log[-3000:]
            answered = [obj for _, obj in self.recorded if "internal_error" in repr(obj)[:100_000]]
            assert not answered, f"the master answered internal_error: {answered[:3]}"

    def _new_logs(self) -> dict[Path, str]:
        out = {}
        for path in self.lab.log_files():
            with open(path, "rb") as fh:
                fh.seek(self.log_offsets.get(path, 0))
                out[path] = fh.read().decode("utf-8", "replace")
        return out

    def _check_processes(self) -> None:
        now = self.lab.master_processes()
        gone = {pid: name for pid, (name, _) in self.procs.items() if pid not in now}
        assert not gone, f"master processes died during the attack: {gone}"
        deadline = time.monotonic() + 3
        while True:
            problems = []
            for pid, (name, before) in self.procs.items():
                after = proc_stat(pid)
                if before is None or after is None:
                    continue
                if after[0] - before[0] > MAX_RSS_GROWTH_KIB:
                    problems.append(f"{name} RSS grew {(after[0] - before[0]) // 1024} MiB")
                if after[1] - before[1] > MAX_FD_GROWTH:
                    problems.append(f"{name} holds {after[1] - before[1]} more file descriptors")
            if not problems or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # closed connections take a moment to be released
        assert not problems, problems


@contextmanager
def lab_attack(lab: Lab, **kwargs: Any) -> Iterator[Attack]:
    attack = Attack(lab, **kwargs)
    attack.begin()
    try:
        yield attack
        attack.end()
        attack.verify()
    finally:
        if not hasattr(attack, "duration"):
            attack.end()
        attack.close()


# ---------------------------------------------------------------- helpers

def _snapshot(base: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for path in base.rglob("*"):
        rel = str(path.relative_to(base))
        try:
            st = path.lstat()
        except OSError:
            continue
        if path.is_symlink():
            out[rel] = ("link", str(path.readlink()))
        elif path.is_dir():
            out[rel] = ("dir", st.st_mode)
        else:
            out[rel] = ("file", st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _diff(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _always_allowed(lab: Lab) -> list[str]:
    cachedir = str(Path(lab.opts["cachedir"]).relative_to(lab.base))
    return [
        "*.log", "*.out",                                  # logs
        f"{cachedir}/jobs.sqlite*",                        # the job cache
        f"{cachedir}/minion_data.sqlite*",                 # the probe's own pillar (rows checked apart)
        f"{cachedir}/presence.json",                       # rewritten every heartbeat period
        f"{cachedir}/.tmp-*",                              # ... atomically, through a temporary file
        f"{cachedir}",                                     # its directory entry (mtime)
    ]


def _data_cache_rows(lab: Lab) -> dict[tuple[str, str], str]:
    """Every row of the master's minion data cache but the honest probe's (whose ``_pillar``
    requests store its pillar): (minion, bank) -> the stored JSON."""
    path = Path(lab.opts["cachedir"]) / "minion_data.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
        rows = conn.execute("SELECT minion, bank, value FROM data WHERE minion != ?", (PROBE,)).fetchall()
    return {(minion, bank): value for minion, bank, value in rows}


def _jobs_since(lab: Lab, since: float) -> dict[str, str]:
    path = Path(lab.opts["cachedir"]) / "jobs.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
        return dict(conn.execute("SELECT jid, fun FROM jobs WHERE created >= ?", (since,)).fetchall())


def _returns(lab: Lab, jids: list[str]) -> dict[tuple[str, str], str]:
    if not jids:
        return {}
    path = Path(lab.opts["cachedir"]) / "jobs.sqlite"
    marks = ",".join("?" * len(jids))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
        rows = conn.execute(f"SELECT jid, minion, ret FROM returns WHERE jid IN ({marks})", jids).fetchall()
    return {(jid, minion): ret for jid, minion, ret in rows}
