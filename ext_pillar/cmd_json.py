"""ext_pillar cmd_json: the JSON a command prints (``%s`` is the minion id).

    ext_pillar:
      - cmd_json: /usr/local/bin/inventory --json %s
"""

from __future__ import annotations

import json
from typing import Any

from ext_pillar._command import run_for_minion


def ext_pillar(minion_id: str, pillar: dict, command: str, timeout: float | None = None) -> dict[str, Any]:
    out = run_for_minion(command, minion_id, timeout)
    try:
        data = json.loads(out)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the output of {command!r} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"the output of {command!r} is a JSON {type(data).__name__}, not an object")
    return data
