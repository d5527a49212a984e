"""ext_pillar file_tree: a directory tree becomes pillar data.

    ext_pillar:
      - file_tree:
          root_dir: /srv/ext_pillar       # absolute, or relative to the pillar_roots of the pillarenv
          follow_dir_links: false
          keep_newline: ['certs/*']       # or true / false
          template: false                 # true: render each file (Jinja, YAML, ... per render_default)
          render_default: jinja|yaml      # pipeline for template: true (default: the `renderer` option)
          renderer_blacklist: [py]
          renderer_whitelist: [jinja, yaml]

``<root_dir>/hosts/<minion_id>/a/b`` becomes ``{a: {b: <contents>}}`` (every
sub-directory a dict, even an empty one); ``<root_dir>/nodegroups/<group>/...``
applies to the minions of that nodegroup when a master compiles (Salt checks
nodegroup membership against the master's accepted minions, so masterless and
offline compiles skip it); host data wins over nodegroup data.  Several roots
(a relative ``root_dir`` under several pillar_roots) merge in order.

Values are strings (Salt 3008 returns bytes, a bug), or bytes for a file that
is not UTF-8.  The trailing newline is stripped unless ``keep_newline`` is true
or one of its globs matches the file's path relative to the host/nodegroup
directory.  With ``template: true`` each file is rendered like an sls file
(with ``grains``, ``pillar``, ``opts``, ``salt``, ``id``; a ``#!`` first line
picks the pipeline) and its value is what the pipeline produces.  A file
symlink leading out of the tree is skipped unless ``follow_dir_links`` is on.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from typing import Any

from compiler import match, merge, salt_functions
from compiler.errors import EXT_PILLAR_ERROR, CompileError
from compiler.render import Renderer
from compiler.roots import LocalRoots, SourceFile
from ext_pillar._errors import DriverError


class _Templates:
    """Renders file contents for ``template: true``."""

    def __init__(self, opts: Mapping[str, Any], minion_id: str, grains: Mapping, pillar: Mapping,
                 render_default: str | None, blacklist: Any, whitelist: Any):
        self.saltenv = str(opts.get("pillarenv") or "base")
        roots = opts.get("pillar_roots") or {}
        source = LocalRoots(roots if isinstance(roots, dict) else {})
        pipe = render_default or opts.get("renderer") or "jinja|yaml"
        self.renderer = Renderer(source, str(pipe), _names(blacklist, "renderer_blacklist"),
                                 _names(whitelist, "renderer_whitelist"))
        self.context = {
            "grains": grains, "pillar": pillar, "opts": opts, "id": minion_id, "minion_id": minion_id,
            "saltenv": self.saltenv, "env": self.saltenv,
            "salt": salt_functions.SaltFunctions(_offline_functions(opts)(minion_id, grains, pillar, opts)),
        }

    def render(self, full_path: str, relpath: str, text: str) -> Any:
        found = SourceFile(self.saltenv, relpath, full_path, text)
        try:
            return self.renderer.render(found, self.context).data
        except CompileError as exc:
            raise CompileError(EXT_PILLAR_ERROR, f"rendering {full_path} failed: {exc.message}",
                               exc.file or full_path, exc.line) from None


def _offline_functions(opts: Mapping[str, Any]) -> Any:
    """The execution functions of the master's pillar compile (runtime/modules' registry, offline)."""
    from runtime import pipeline

    return pipeline.offline_functions(opts)


def _names(value: Any, option: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise DriverError(f"{option} must be a list of renderer names, got {value!r}")


def _keep_newline(relpath: str, keep_newline: bool | list[str]) -> bool:
    if isinstance(keep_newline, bool):
        return keep_newline
    # Salt matches "<dir>/<file>" with "." as the dir of top-level files; accept both spellings
    candidates = [relpath] if "/" in relpath else [relpath, f"./{relpath}"]
    return any(fnmatch.fnmatch(c, str(g)) for g in keep_newline for c in candidates)


def _inside(path: str, real_top: str) -> bool:
    real = os.path.realpath(path)
    return real == real_top or real.startswith(real_top.rstrip(os.sep) + os.sep)


def _read_tree(top: str, follow_dir_links: bool, keep_newline: bool | list[str],
               templates: _Templates | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if not os.path.isdir(top):
        return data
    real_top = os.path.realpath(top)
    for cur, dirs, files in os.walk(top, followlinks=follow_dir_links):
        dirs.sort()
        rel_dir = os.path.relpath(cur, top)
        node = data
        if rel_dir != ".":
            for part in rel_dir.split(os.sep):
                node = node.setdefault(part, {})
        for name in dirs:
            node.setdefault(name, {})
        for name in sorted(files):
            full = os.path.join(cur, name)
            if not os.path.isfile(full):
                continue  # fifos, sockets, dangling links: not data
            if not follow_dir_links and not _inside(full, real_top):
                continue  # a symlink leading out of the tree
            relpath = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            try:
                with open(full, "rb") as fh:
                    raw = fh.read()
            except OSError as exc:
                raise DriverError(f"cannot read {full}: {exc.strerror}") from None
            if raw.endswith(b"\n") and not _keep_newline(relpath, keep_newline):
                raw = raw[:-1]
            try:
                value: Any = raw.decode("utf-8")
            except UnicodeDecodeError:
                value = raw
            if templates is not None and isinstance(value, str):
                value = templates.render(full, relpath, value)
            node[name] = value
    return data


def _roots(root_dir: str, opts: Mapping[str, Any]) -> list[str]:
    if os.path.isabs(root_dir):
        return [root_dir]
    env = opts.get("pillarenv") or "base"
    roots = opts.get("pillar_roots") or {}
    env_roots = roots.get(env) if isinstance(roots, Mapping) else None
    if not env_roots:
        raise DriverError(f"root_dir {root_dir!r} is relative but pillar_roots has no {env!r} environment "
                          "to resolve it against")
    out: list[str] = []
    for env_root in env_roots:
        path = os.path.normpath(os.path.join(str(env_root), root_dir))
        if not out or out[-1] != path:
            out.append(path)
    return out


def _nodegroup_data(root: str, minion_id: str, grains: Mapping, pillar: Mapping, opts: Mapping[str, Any],
                    read: Any) -> dict[str, Any]:
    groups = opts.get("nodegroups") or {}
    ng_dir = os.path.join(root, "nodegroups")
    if opts.get("__role") != "master" or not groups or not os.path.isdir(ng_dir):
        return {}
    out: dict[str, Any] = {}
    minion = match.Minion(minion_id, grains, pillar)
    for group in sorted(os.listdir(ng_dir)):
        if group in groups and os.path.isdir(os.path.join(ng_dir, group)):
            if match.nodegroup_match(group, minion, groups):
                out = merge.merge(out, read(os.path.join(ng_dir, group)))
    return out


def ext_pillar(minion_id: str, pillar: dict, root_dir: str | None = None, follow_dir_links: bool = False,
               debug: bool = False, keep_newline: Any = False, render_default: str | None = None,
               renderer_blacklist: list | None = None, renderer_whitelist: list | None = None,
               template: bool = False, *, opts: Mapping | None = None,
               grains: Mapping | None = None) -> dict[str, Any]:
    if not root_dir or not isinstance(root_dir, str):
        raise DriverError(f"file_tree needs root_dir (a directory), got {root_dir!r}")
    if isinstance(keep_newline, str):
        keep_newline = [keep_newline]
    if not isinstance(keep_newline, (bool, list)):
        raise DriverError(f"keep_newline must be true, false or a list of file globs, got {keep_newline!r}")
    for option, value in (("follow_dir_links", follow_dir_links), ("template", template), ("debug", debug)):
        if not isinstance(value, bool):
            raise DriverError(f"{option} must be true or false, got {value!r}")
    opts = opts or {}
    grains = grains or {}
    if os.sep in minion_id or minion_id in (".", "..") or "\x00" in minion_id:
        raise DriverError(f"minion id {minion_id!r} cannot name a directory")
    templates = (_Templates(opts, minion_id, grains, pillar, render_default, renderer_blacklist,
                            renderer_whitelist) if template else None)

    def read(top: str) -> dict[str, Any]:
        return _read_tree(top, follow_dir_links, keep_newline, templates)

    result: dict[str, Any] = {}
    for root in _roots(root_dir, opts):
        host_dir = os.path.join(root, "hosts", minion_id)
        if os.path.exists(host_dir) and not os.path.isdir(host_dir):
            raise DriverError(f"{host_dir} exists but is not a directory")
        data = _nodegroup_data(root, minion_id, grains, pillar, opts, read)
        data = merge.merge(data, read(host_dir))
        result = merge.merge(result, data)
    return result
