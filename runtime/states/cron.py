"""The ``cron`` state module: jobs in a user's crontab (present, absent, env_present, env_absent).

As Salt 3008's ``cron`` module: the crontab (``crontab -l -u user``) keeps what it had above the
line ``# Lines below here are managed by Salt, do not edit``; below it, each managed job is
``# [comment ]SALT_CRON_IDENTIFIER:<identifier>`` followed by ``min hour dom month dow cmd``
(``#DISABLED#`` in front when ``commented``), or ``@special cmd``. A job is found by its
identifier (default: the command). The crontab is installed with ``crontab -u user FILE``.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime import cmdrun

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["absent", "env_absent", "env_present", "present"]

TAG = "# Lines below here are managed by Salt, do not edit"
ID = "SALT_CRON_IDENTIFIER"
_FIELDS = ("minute", "hour", "daymonth", "month", "dayweek")


def unavailable() -> str | None:
    return None if shutil.which("crontab") else "cron module could not be loaded"


@dataclass
class Job:
    cmd: str
    minute: str = "*"
    hour: str = "*"
    daymonth: str = "*"
    month: str = "*"
    dayweek: str = "*"
    spec: str | None = None  # @reboot, @daily ...
    comment: str | None = None
    identifier: str | None = None
    commented: bool = False

    def lines(self) -> list[str]:
        out = []
        if self.comment is not None or self.identifier is not None:
            text = "#"
            if self.comment:
                text += " " + self.comment.rstrip().replace("\n", "\n# ")
            if self.identifier:
                text += f" {ID}:{self.identifier}"
            out.append(text)
        when = self.spec if self.spec else " ".join(getattr(self, f) for f in _FIELDS)
        out.append(f"{'#DISABLED#' if self.commented else ''}{when} {self.cmd}")
        return out


@dataclass
class Tab:
    pre: list[str] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)

    def text(self) -> str:
        lines = list(self.pre)
        if not lines or lines[-1] != TAG:
            lines.append(TAG)
        lines += [f'{name}=""' if value in (None, "") else f"{name}={value}" for name, value in self.env]
        timed = [j for j in self.jobs if not j.spec]
        special = [j for j in self.jobs if j.spec]
        for job in timed + special:
            lines += job.lines()
        return "".join(f"{line}\n" for line in lines)


def parse(text: str) -> Tab:
    tab = Tab()
    managed = False
    comment: str | None = None
    identifier: str | None = None
    for line in text.splitlines():
        if line == TAG:
            managed = True
            continue
        if not managed:
            tab.pre.append(line)
            continue
        disabled = line.startswith("#DISABLED#")
        if disabled:
            line = line[len("#DISABLED#"):]
        if line.startswith("@"):
            comps = line.split()
            if len(comps) >= 2:
                tab.jobs.append(Job(" ".join(comps[1:]), spec=comps[0], comment=comment, identifier=identifier,
                                    commented=disabled))
            comment = identifier = None
        elif line.startswith("#"):
            text_ = line.lstrip("# ")
            if ID in text_:
                before, _, after = text_.partition(ID)
                text_ = before.rstrip()
                identifier = after[1:] if len(after) > 1 else identifier
            comment = text_ if comment is None else f"{comment}\n{text_}"
        elif line.find("=") > 0 and (" " not in line or line.index("=") < line.index(" ")):
            name, _, value = line.partition("=")
            tab.env.append((name, value))
        elif len(line.split(" ")) > 5:
            comps = line.split(" ")
            minute, hour, daymonth, month, dayweek = comps[:5]
            tab.jobs.append(Job(" ".join(comps[5:]), minute, hour, daymonth, month, dayweek, comment=comment,
                                identifier=identifier, commented=disabled))
            comment = identifier = None
    return tab


def read_tab(user: str) -> Tab:
    res = cmdrun.run(["crontab", "-l", "-u", user], cwd="/")
    return parse(res.stdout if res.retcode == 0 else "")


def write_tab(user: str, tab: Tab) -> str | None:
    """None when written, else crontab's error."""
    with tempfile.NamedTemporaryFile("w", prefix="saltpan-cron-", delete=False) as handle:
        handle.write(tab.text())
        path = handle.name
    try:
        os.chmod(path, 0o644)
        res = cmdrun.run(["crontab", "-u", user, path], cwd="/")
    finally:
        os.unlink(path)
    return None if res.retcode == 0 else (res.stderr or res.stdout).strip()


def _find(tab: Tab, cmd: str, identifier: str, special: Any = None, any_kind: bool = True) -> Job | None:
    """The job with this identifier (or, without one, this command). ``any_kind`` False: only timed jobs
    without ``special``, only @special ones with it (what Salt's rm_job/rm_special look at)."""
    for job in tab.jobs:
        if not any_kind and bool(job.spec) != bool(special):
            continue
        if job.identifier is not None:
            if job.identifier == identifier:
                return job
        elif job.cmd == cmd:
            return job
    return None


def _when_matches(have: str, want: Any) -> bool:
    want = str(want).lower()
    return have == want or (want == "random" and have != "*")


def _pick(value: Any, field_name: str) -> str:
    value = str(value).lower()
    if value == "random":
        ranges = {"minute": (0, 59), "hour": (0, 23), "daymonth": (1, 28), "month": (1, 12), "dayweek": (0, 6)}
        return str(random.randint(*ranges[field_name]))  # noqa: S311 - spreading jobs, not security
    return value


def _status(user: str, name: str, identifier: str, times: dict[str, Any], special: Any, comment: Any,
            commented: bool) -> tuple[str, Tab, Job | None]:
    tab = read_tab(user)
    job = _find(tab, name, identifier)
    if job is None:
        return "absent", tab, None
    same = (job.cmd == name and job.commented == commented and (comment is None or job.comment == comment)
            and job.identifier == identifier
            and (job.spec == special if special else job.spec is None
                 and all(_when_matches(getattr(job, f), times[f]) for f in _FIELDS)))
    return ("present" if same else "update"), tab, job


def present(ctx: StateContext, name: str, user: str = "root", minute: Any = "*", hour: Any = "*",
            daymonth: Any = "*", month: Any = "*", dayweek: Any = "*", comment: Any = None, commented: Any = False,
            identifier: Any = False, special: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The job ``name`` (the command) is in ``user``'s crontab at these times (or ``special``)."""
    name = name.strip()
    identifier = name if identifier is False else str(identifier)
    ret: dict[str, Any] = {"changes": {}, "comment": "", "name": name, "result": True}
    times = {"minute": minute, "hour": hour, "daymonth": daymonth, "month": month, "dayweek": dayweek}
    status, tab, job = _status(user, name, identifier, times, special, comment, bool(commented))
    if status == "present":
        return dict(ret, comment=f"Cron {name} already present")
    if ctx.test:
        return dict(ret, result=None, comment=f"Cron {name} is set to be {'added' if status == 'absent' else 'updated'}")
    if comment is None and job is not None:
        comment = job.comment  # Salt: no comment given keeps the job's
    new = Job(name, spec=special, comment=comment, identifier=identifier, commented=bool(commented),
              **{f: (getattr(job, f) if job is not None and not job.spec and _when_matches(getattr(job, f), times[f])
                     else _pick(times[f], f)) for f in _FIELDS})
    if job is None:
        tab.jobs.append(new)
    else:
        tab.jobs[tab.jobs.index(job)] = new
    error = write_tab(user, tab)
    if error:
        return dict(ret, result=False, comment=f"Cron {name} for user {user} failed to commit with error \n{error}")
    if status == "absent":
        return dict(ret, changes={user: name}, comment=f"Cron {name} added to {user}'s crontab")
    return dict(ret, changes={user: name}, comment=f"Cron {name} updated")


def absent(ctx: StateContext, name: str, user: str = "root", identifier: Any = False, special: Any = None,
           **kwargs: Any) -> dict[str, Any]:
    """The job ``name`` is not in ``user``'s crontab."""
    name = name.strip()
    identifier = name if identifier is False else str(identifier)
    ret: dict[str, Any] = {"name": name, "result": True, "changes": {}, "comment": ""}
    tab = read_tab(user)
    job = _find(tab, name, identifier, special, any_kind=False)
    if ctx.test:
        if job is None:
            return dict(ret, comment=f"Cron {name} is absent")
        return dict(ret, result=None, comment=f"Cron {name} is set to be removed")
    if job is None:
        return dict(ret, comment=f"Cron {name} already absent")
    tab.jobs.remove(job)
    error = write_tab(user, tab)
    if error:
        return dict(ret, result=False, comment=f"Cron {name} for user {user} failed to commit with error {error}")
    return dict(ret, changes={user: name}, comment=f"Cron {name} removed from {user}'s crontab")


def env_present(ctx: StateContext, name: str, value: Any = None, user: str = "root", **kwargs: Any) -> dict[str, Any]:
    """The crontab variable ``name`` is ``value``."""
    ret: dict[str, Any] = {"changes": {}, "comment": "", "name": name, "result": True}
    tab = read_tab(user)
    value = "" if value is None else str(value)
    current = dict(tab.env)
    if name in current and current[name] == value:
        return dict(ret, comment=f"Cron env {name} already present")
    if ctx.test:
        return dict(ret, result=None, comment=f"Cron env {name} is set to be {'updated' if name in current else 'added'}")
    tab.env = [(k, value if k == name else v) for k, v in tab.env] if name in current else [*tab.env, (name, value)]
    error = write_tab(user, tab)
    if error:
        return dict(ret, result=False, comment=f"Cron env {name} for user {user} failed to commit with error \n{error}")
    return dict(ret, changes={user: f"{name}={value}"},
                comment=f"Cron env {name} {'updated' if name in current else 'added to ' + user + chr(39) + 's crontab'}")


def env_absent(ctx: StateContext, name: str, user: str = "root", **kwargs: Any) -> dict[str, Any]:
    """The crontab variable ``name`` is not set."""
    ret: dict[str, Any] = {"name": name, "result": True, "changes": {}, "comment": ""}
    tab = read_tab(user)
    if name not in dict(tab.env):
        return dict(ret, comment=f"Cron env {name} is absent" if ctx.test else f"Cron env {name} already absent")
    if ctx.test:
        return dict(ret, result=None, comment=f"Cron env {name} is set to be removed")
    tab.env = [(k, v) for k, v in tab.env if k != name]
    error = write_tab(user, tab)
    if error:
        return dict(ret, result=False, comment=f"Cron env {name} for user {user} failed to commit with error {error}")
    return dict(ret, changes={user: name}, comment=f"Cron env {name} removed from {user}'s crontab")
