"""ext_pillar http_yaml: the YAML mapping a URL answers for the minion.

Same options as http_json (``url`` with ``%s`` and ``<grain>``, ``with_grains``,
``namespace``, ``timeout``, ``verify_ssl``, ``ca_bundle``, ``header_dict``,
``username``/``password``/``auth``):

    ext_pillar:
      - http_yaml:
          url: https://inventory.example.com/api/hosts/%s.yaml
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ext_pillar import _http
from ext_pillar._payload import yaml_mapping


def ext_pillar(minion_id: str, pillar: dict, url: str, with_grains: bool = False,
               header_dict: Mapping[str, Any] | None = None, auth: Any = None, username: str | None = None,
               password: str | None = None, namespace: str | None = None, timeout: float | None = None,
               verify_ssl: bool = True, ca_bundle: str | None = None, *,
               grains: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body, shown = _http.fetch_text(minion_id, url, with_grains, grains, timeout=timeout, verify_ssl=verify_ssl,
                                   ca_bundle=ca_bundle, header_dict=header_dict, username=username,
                                   password=password, auth=auth)
    return _http.nest(yaml_mapping(body, f"the body of {shown}"), namespace)
