"""ext_pillar cmd_json: the JSON object a command prints (``%s`` is the minion id).

    ext_pillar:
      - cmd_json: /usr/local/bin/inventory --json %s
      - cmd_json:                       # with a time limit of its own
          command: /usr/local/bin/inventory --json %s
          timeout: 10
"""

from __future__ import annotations

from typing import Any

from ext_pillar._command import run_for_minion
from ext_pillar._payload import json_mapping


def ext_pillar(minion_id: str, pillar: dict, command: str, timeout: float | None = None) -> dict[str, Any]:
    out = run_for_minion(command, minion_id, timeout)
    return json_mapping(out, f"the output of {command!r}")
