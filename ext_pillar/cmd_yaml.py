"""ext_pillar cmd_yaml: the YAML mapping a command prints (``%s`` is the minion id).

    ext_pillar:
      - cmd_yaml: cat /srv/inventory/%s.yaml
      - cmd_yaml:
          command: /usr/local/bin/inventory --yaml %s
          timeout: 10
"""

from __future__ import annotations

from typing import Any

from ext_pillar._command import run_for_minion
from ext_pillar._payload import yaml_mapping


def ext_pillar(minion_id: str, pillar: dict, command: str, timeout: float | None = None) -> dict[str, Any]:
    out = run_for_minion(command, minion_id, timeout)
    return yaml_mapping(out, f"the output of {command!r}")
