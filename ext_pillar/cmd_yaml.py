"""ext_pillar cmd_yaml: the YAML a command prints (``%s`` is the minion id).

    ext_pillar:
      - cmd_yaml: cat /srv/inventory/%s.yaml
"""

from __future__ import annotations

from typing import Any

import yaml

from ext_pillar._command import run_for_minion


def ext_pillar(minion_id: str, pillar: dict, command: str, timeout: float | None = None) -> dict[str, Any]:
    out = run_for_minion(command, minion_id, timeout)
    try:
        data = yaml.safe_load(out)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ValueError(f"the output of {command!r} is not YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"the output of {command!r} is a YAML {type(data).__name__}, not a mapping")
    return data
