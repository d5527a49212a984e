"""The ``git`` state module: ``latest`` (a clone kept at a remote revision), ``config_set``,
``config_unset``.

``git.latest`` as Salt 3008's for the common paths: the remote's refs are read with
``git ls-remote`` (over SSH with ``identity`` keys, which must exist, as Salt checks first);
a missing or empty target is cloned; an existing clone is fetched and fast-forwarded (or reset
with ``force_reset``) to ``rev`` (``HEAD``, a branch, a tag or a commit). Comments and changes
are Salt's (``{new: "url => target", revision: {old, new}}``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime import cmdrun
from runtime.states import _files as F
from runtime.states import _source

if TYPE_CHECKING:
    from runtime.states import StateContext

__all__ = ["config_set", "config_unset", "latest"]

# Salt's ssh wrapper options for identity files
_SSH_OPTIONS = ("-oStrictHostKeyChecking=no -oPasswordAuthentication=no -oKbdInteractiveAuthentication=no "
                "-oChallengeResponseAuthentication=no")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def unavailable() -> str | None:
    return None if shutil.which("git") else "git not found"


class GitError(Exception):
    pass


@dataclass
class Git:
    """Runs git as ``user`` with the identity files and HTTPS credentials of one state."""

    user: str | None = None
    identity: list[str] | None = None

    def env(self) -> dict[str, str]:
        env = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        if self.identity:
            keys = " ".join(f"-i {path}" for path in self.identity)
            env["GIT_SSH_COMMAND"] = f"ssh {_SSH_OPTIONS} {keys}"
        return env

    def run(self, args: list[str], cwd: str | None = None, check: bool = True) -> cmdrun.CommandResult:
        try:
            res = cmdrun.run(["git", *args], cwd=cwd or "/", runas=self.user, env=self.env(), timeout=600)
        except cmdrun.CommandError as exc:
            raise GitError(str(exc)) from None
        if check and res.retcode != 0:
            raise GitError((res.stderr or res.stdout).strip())
        return res


def _with_credentials(url: str, https_user: Any, https_pass: Any) -> str:
    if not https_user or not url.startswith("https://"):
        return url
    parts = urllib.parse.urlsplit(url)
    auth = urllib.parse.quote(str(https_user), safe="")
    if https_pass:
        auth += ":" + urllib.parse.quote(str(https_pass), safe="")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{auth}@{parts.hostname}"
                                                  + (f":{parts.port}" if parts.port else "")))


def _identities(ctx: StateContext, identity: Any, tmpdir: str) -> list[str]:
    """Local paths of the identity files; GitError (Salt's wording) when some do not exist."""
    items = identity if isinstance(identity, list) else [identity]
    paths: list[str] = []
    missing: list[str] = []
    for item in (str(i) for i in items if i):
        if item.startswith("salt://"):
            fetched = _source.fetch(ctx, item)
            if fetched is None:
                missing.append(item)
                continue
            path = os.path.join(tmpdir, f"identity{len(paths)}")
            F.atomic_write(path, fetched.data, 0o600)
            paths.append(path)
        elif os.path.isfile(item):
            paths.append(item)
        else:
            missing.append(item)
    if missing:
        raise GitError("Failed to check remote refs: Unable to authenticate using identity file:\n\n"
                       f"The following identity file(s) were not found: {', '.join(missing)}")
    return paths


def remote_refs(git: Git, url: str) -> dict[str, str]:
    try:
        res = git.run(["ls-remote", url])
    except GitError as exc:
        raise GitError(f"Failed to check remote refs: {exc}") from None
    refs = {}
    for line in res.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        if ref:
            refs[ref] = sha
    return refs


def resolve(refs: dict[str, str], rev: str) -> tuple[str | None, str]:
    """(commit the remote has for rev, kind: "head", "branch", "tag" or "sha")."""
    if rev == "HEAD":
        return refs.get("HEAD"), "head"
    if f"refs/heads/{rev}" in refs:
        return refs[f"refs/heads/{rev}"], "branch"
    if f"refs/tags/{rev}^{{}}" in refs:
        return refs[f"refs/tags/{rev}^{{}}"], "tag"
    if f"refs/tags/{rev}" in refs:
        return refs[f"refs/tags/{rev}"], "tag"
    if _SHA.match(rev):
        return rev, "sha"
    return None, "missing"


def _is_repo(target: str) -> bool:
    return os.path.isdir(os.path.join(target, ".git")) or (
        os.path.isfile(os.path.join(target, "HEAD")) and os.path.isdir(os.path.join(target, "objects")))


def _short(sha: str | None) -> str:
    return (sha or "")[:7]


def latest(ctx: StateContext, name: str, rev: str = "HEAD", target: str | None = None, branch: str | None = None,
           user: str | None = None, force_clone: Any = False, force_reset: Any = False, remote: str = "origin",
           depth: Any = None, identity: Any = None, https_user: Any = None, https_pass: Any = None,
           submodules: Any = False, **kwargs: Any) -> dict[str, Any]:
    """The clone at ``target`` is at the remote's ``rev``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if not target:
        return F.fail(ret, "target is required")
    if not os.path.isabs(target):
        return F.fail(ret, f"target '{target}' is not an absolute path")
    rev = str(rev)
    url = _with_credentials(name, https_user, https_pass)
    with tempfile.TemporaryDirectory(prefix="saltpan-git-") as tmpdir:
        try:
            git = Git(user, _identities(ctx, identity, tmpdir) if identity else None)
            refs = remote_refs(git, url)
            remote_sha, kind = resolve(refs, rev)
            if remote_sha is None:
                return F.fail(ret, f"No revision matching '{rev}' exists in the remote repository")
            if os.path.isdir(target) and _is_repo(target):
                return _update(ctx, ret, git, url, name, target, rev, kind, remote_sha, remote, branch,
                               bool(force_reset), submodules)
            if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
                if not force_clone:
                    return F.fail(ret, f"Target '{target}' exists, is non-empty and is not a git repository. Set the "
                                       "'force_clone' option to True to remove this directory's contents and proceed "
                                       "with cloning the remote repository")
                if ctx.test:
                    ret.update(result=None, changes={"forced clone": True, "new": f"{name} => {target}"},
                               comment=f"Target directory {target} would be removed, then {name} cloned to it")
                    return ret
                F.remove_path(target)
            return _clone(ctx, ret, git, url, name, target, rev, kind, remote_sha, remote, branch, depth, submodules)
        except GitError as exc:
            return F.fail(ret, str(exc))


def _clone(ctx: StateContext, ret: dict[str, Any], git: Git, url: str, name: str, target: str, rev: str, kind: str,
           remote_sha: str, remote: str, branch: str | None, depth: Any, submodules: Any) -> dict[str, Any]:
    if ctx.test:
        ret.update(result=None, changes={"new": f"{name} => {target}"},
                   comment=f"Repository {name} would be cloned to {target}")
        return ret
    args = ["clone", "--origin", remote]
    if depth:
        args += ["--depth", str(depth)]
    if kind in ("branch", "tag"):
        args += ["--branch", rev]
    os.makedirs(os.path.dirname(target) or "/", exist_ok=True)
    git.run([*args, url, target])
    comment = f"{name} cloned to {target}"
    if kind in ("tag", "sha"):
        git.run(["checkout", "-q", remote_sha], cwd=target)
        if branch:
            git.run(["checkout", "-q", "-B", branch], cwd=target)
        comment += ". Tracking branch was unset."
    elif branch and kind == "branch" and branch != rev:
        git.run(["checkout", "-q", "-B", branch, f"{remote}/{rev}"], cwd=target)
    if submodules:
        git.run(["submodule", "update", "--init", "--recursive"], cwd=target)
    new = git.run(["rev-parse", "HEAD"], cwd=target).stdout.strip()
    ret.update(changes={"new": f"{name} => {target}", "revision": {"old": None, "new": new}}, comment=comment)
    return ret


def _update(ctx: StateContext, ret: dict[str, Any], git: Git, url: str, name: str, target: str, rev: str, kind: str,
            remote_sha: str, remote: str, branch: str | None, force_reset: bool, submodules: Any) -> dict[str, Any]:
    notes = []
    current_url = git.run(["config", "--get", f"remote.{remote}.url"], cwd=target, check=False).stdout.strip()
    if current_url != url:
        if ctx.test:
            notes.append(f"Remote '{remote}' would be changed from {current_url} to {name}")
        else:
            if current_url:
                git.run(["remote", "set-url", remote, url], cwd=target)
            else:
                git.run(["remote", "add", remote, url], cwd=target)
            notes.append(f"Remote '{remote}' changed from {current_url} to {name}")
    local_sha = git.run(["rev-parse", "HEAD"], cwd=target, check=False).stdout.strip() or None
    if local_sha == remote_sha or (kind == "sha" and local_sha and local_sha.startswith(remote_sha)):
        ret["comment"] = f"Repository {target} is up-to-date"
        if notes:
            ret["comment"] += ("\n\nChanges that would be made: " if ctx.test else "\n\nChanges made: ") + \
                ", ".join(notes)
        return ret
    if ctx.test:
        ret.update(result=None, changes={"revision": {"old": local_sha, "new": remote_sha}},
                   comment=" ".join([*(f"{n}." for n in notes), f"Remote '{remote}' would be fetched. Repository would "
                                     f"be updated from {_short(local_sha)} to {_short(remote_sha)}."]))
        return ret
    git.run(["fetch", "--tags", remote], cwd=target)
    fetched = f"{name} was fetched, resulting in updated refs"
    is_ff = local_sha is None or git.run(["merge-base", "--is-ancestor", local_sha, remote_sha], cwd=target,
                                         check=False).retcode == 0
    if not is_ff and not force_reset:
        return F.fail(ret, f"Repository would be updated to {_short(remote_sha)}, but this is not a fast-forward "
                           "merge. Set 'force_reset' to True to force this update.\n\nChanges already made: "
                           f"{fetched}")
    on_branch = git.run(["symbolic-ref", "-q", "--short", "HEAD"], cwd=target, check=False).stdout.strip()
    if kind in ("tag", "sha") or not on_branch:
        git.run(["checkout", "-q", *(["-f"] if force_reset else []), remote_sha], cwd=target)
        where = f"{rev}"
    elif is_ff:
        git.run(["merge", "--ff-only", remote_sha], cwd=target)
        where = "remote HEAD" if kind == "head" else f"{remote}/{rev}"
    else:
        git.run(["reset", "--hard", remote_sha], cwd=target)
        where = "remote HEAD" if kind == "head" else f"{remote}/{rev}"
    if submodules:
        git.run(["submodule", "update", "--init", "--recursive"], cwd=target)
    how = "fast-forwarded" if is_ff else "hard-reset"
    ret.update(changes={"revision": {"old": local_sha, "new": remote_sha}},
               comment=f"{fetched}. Repository was {how} to {where} ({_short(remote_sha)}).")
    if notes:
        ret["comment"] += "\n\nChanges made: " + ", ".join(notes)
    return ret


def _config_args(repo: str | None, is_global: bool) -> tuple[list[str], str | None]:
    if is_global:
        return ["--global"], None
    if not repo:
        raise GitError("'repo' is required unless 'global' is True")
    return ["--local"], repo


def config_set(ctx: StateContext, name: str, value: Any = None, multivar: Any = None, repo: str | None = None,
               user: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """``git config name value`` (``multivar``: every value of a multi-valued key), in ``repo`` or ``global``."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    if (value is None) == (multivar is None):
        return F.fail(ret, "Exactly one of 'value' or 'multivar' must be set")
    wanted = [str(v) for v in (multivar if isinstance(multivar, list) else str(multivar).split(","))] \
        if multivar is not None else [str(value).lower() if isinstance(value, bool) else str(value)]
    git = Git(user)
    try:
        scope, cwd = _config_args(repo, bool(kwargs.get("global")))
        res = git.run(["config", *scope, "--get-all", name], cwd=cwd, check=False)
        current = res.stdout.splitlines() if res.retcode == 0 else []
        if current == wanted:
            ret["comment"] = f"No changes made to {name}"
            return ret
        old: Any = current[0] if len(current) == 1 and value is not None else (current or None)
        new: Any = wanted[0] if value is not None else wanted
        if ctx.test:
            ret.update(result=None, changes={name: {"old": old, "new": new}},
                       comment=f"{name} would be {'updated' if current else 'added'}")
            return ret
        git.run(["config", *scope, "--unset-all", name], cwd=cwd, check=False)
        for item in wanted:
            git.run(["config", *scope, "--add", name, item], cwd=cwd)
    except GitError as exc:
        return F.fail(ret, str(exc))
    ret.update(changes={name: {"old": old, "new": new}}, comment=f"{name} has been set")
    return ret


def config_unset(ctx: StateContext, name: str, value_regex: str | None = None, repo: str | None = None,
                 user: str | None = None, all: Any = False, **kwargs: Any) -> dict[str, Any]:  # noqa: A002 - Salt's
    """No ``git config`` key ``name`` (a regex with ``all``; only values matching ``value_regex``)."""
    ret: dict[str, Any] = {"name": name, "changes": {}, "result": True, "comment": ""}
    git = Git(user)
    try:
        scope, cwd = _config_args(repo, bool(kwargs.get("global")))
        res = git.run(["config", *scope, "--get-regexp" if all else "--get-all", name, *([value_regex] if
                      value_regex else [])], cwd=cwd, check=False)
        found = res.stdout.splitlines() if res.retcode == 0 else []
        if not found:
            ret["comment"] = "No matching keys are set"
            return ret
        if ctx.test:
            ret.update(result=None, changes={name: {"old": found, "new": None}},
                       comment=f"Key(s) matching '{name}' would be removed")
            return ret
        keys = sorted({line.split(" ", 1)[0] for line in found}) if all else [name]
        for key in keys:
            git.run(["config", *scope, "--unset-all", key, *([value_regex] if value_regex else [])], cwd=cwd)
    except GitError as exc:
        return F.fail(ret, str(exc))
    ret.update(changes={name: {"old": found, "new": None}}, comment="Key(s) removed")
    return ret
