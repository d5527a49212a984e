"""ext_pillar file_tree: a directory tree becomes pillar data.

    ext_pillar:
      - file_tree:
          root_dir: /srv/ext_pillar
          follow_dir_links: false
          keep_newline: [ 'certs/*' ]      # or true / false

``<root_dir>/hosts/<minion_id>/a/b`` becomes ``{a: {b: <contents>}}``;
``<root_dir>/nodegroups/<group>/...`` applies to the minions of that nodegroup
when a master compiles (it knows its minions); host data wins over nodegroup
data.  Values are strings (Salt 3008 returns bytes, a bug); the trailing newline
is stripped unless ``keep_newline`` is true or matches the file's relative path.
A relative ``root_dir`` resolves against the pillar_roots of the pillarenv.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from typing import Any

import jinja2.sandbox

from compiler import match, merge


def _keep_newline(relpath: str, keep_newline: Any) -> bool:
    if isinstance(keep_newline, bool):
        return keep_newline
    if isinstance(keep_newline, str):
        keep_newline = [keep_newline]
    if isinstance(keep_newline, list):
        return any(fnmatch.fnmatch(relpath, str(g)) for g in keep_newline)
    return False


def _render(text: str, minion_id: str, pillar: Mapping, opts: Mapping, grains: Mapping) -> str:
    env = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined)
    return env.from_string(text).render(grains=grains, pillar=pillar, opts=opts, minion_id=minion_id)


def _read_tree(top: str, follow_dir_links: bool, keep_newline: Any, template: bool, minion_id: str,
               pillar: Mapping, opts: Mapping, grains: Mapping) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if not os.path.isdir(top):
        return data
    real_top = os.path.realpath(top)
    for cur, dirs, files in os.walk(top, followlinks=follow_dir_links):
        dirs.sort()
        rel_dir = os.path.relpath(cur, top)
        for name in sorted(files):
            full = os.path.join(cur, name)
            if not follow_dir_links and not os.path.realpath(full).startswith(real_top + os.sep):
                continue  # a symlink leading out of the tree
            relpath = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            try:
                with open(full, "rb") as fh:
                    raw = fh.read()
            except OSError as exc:
                raise OSError(f"file_tree cannot read {full}: {exc.strerror}") from None
            text = raw.decode("utf-8", errors="replace")
            if template:
                text = _render(text, minion_id, pillar, opts, grains)
            if not _keep_newline(relpath, keep_newline) and text.endswith("\n"):
                text = text[:-1]
                if text.endswith("\r"):
                    text = text[:-1]
            ptr = data
            parts = relpath.split("/")
            for part in parts[:-1]:
                node = ptr.setdefault(part, {})
                if not isinstance(node, dict):
                    node = ptr[part] = {}
                ptr = node
            ptr[parts[-1]] = text
    return data


def _roots(root_dir: str, opts: Mapping) -> list[str]:
    if os.path.isabs(root_dir):
        return [root_dir]
    env = opts.get("pillarenv") or "base"
    dirs = (opts.get("pillar_roots") or {}).get(env) or []
    return [os.path.join(d, root_dir) for d in dirs] or [os.path.abspath(root_dir)]


def ext_pillar(minion_id: str, pillar: dict, root_dir: str | None = None, follow_dir_links: bool = False,
               debug: bool = False, keep_newline: Any = False, render_default: str | None = None,
               renderer_blacklist: list | None = None, renderer_whitelist: list | None = None,
               template: bool = False, *, opts: Mapping | None = None,
               grains: Mapping | None = None) -> dict[str, Any]:
    if not root_dir:
        raise ValueError("file_tree needs root_dir")
    opts = opts or {}
    grains = grains or {}
    if os.sep in minion_id or minion_id in (".", ".."):
        raise ValueError(f"minion id {minion_id!r} cannot name a directory")
    result: dict[str, Any] = {}
    for root in _roots(str(root_dir), opts):
        if opts.get("__role") == "master":
            groups = opts.get("nodegroups") or {}
            ng_dir = os.path.join(root, "nodegroups")
            if os.path.isdir(ng_dir):
                for group in sorted(os.listdir(ng_dir)):
                    if group in groups and match.nodegroup_match(group, match.Minion(minion_id, grains), groups):
                        result = merge.merge(result, _read_tree(os.path.join(ng_dir, group), follow_dir_links,
                                                                keep_newline, template, minion_id, pillar, opts,
                                                                grains))
        host_dir = os.path.join(root, "hosts", minion_id)
        result = merge.merge(result, _read_tree(host_dir, follow_dir_links, keep_newline, template, minion_id,
                                                pillar, opts, grains))
    return result
