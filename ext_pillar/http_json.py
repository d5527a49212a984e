"""ext_pillar http_json: the JSON object a URL answers for the minion.

    ext_pillar:
      - http_json:
          url: https://inventory.example.com/api/hosts/%s     # %s -> the minion id
          namespace: inventory        # nest the data under this key (optional)
          timeout: 10                 # seconds (default 30, never above ext_pillar_timeout)
          ca_bundle: /etc/ssl/inventory-ca.pem   # verify against this CA (default: system CAs)
          verify_ssl: true            # default true; false turns TLS verification off
          header_dict: {Accept: application/json}
          username: salt              # HTTP basic auth (or auth: [user, password])
          password: secret
      - http_json:
          url: http://cmdb.example.com/by-role/<role>          # <grain> -> the minion's grain value
          with_grains: true
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ext_pillar import _http
from ext_pillar._payload import json_mapping


def ext_pillar(minion_id: str, pillar: dict, url: str, with_grains: bool = False,
               header_dict: Mapping[str, Any] | None = None, auth: Any = None, username: str | None = None,
               password: str | None = None, namespace: str | None = None, timeout: float | None = None,
               verify_ssl: bool = True, ca_bundle: str | None = None, *,
               grains: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body, shown = _http.fetch_text(minion_id, url, with_grains, grains, timeout=timeout, verify_ssl=verify_ssl,
                                   ca_bundle=ca_bundle, header_dict=header_dict, username=username,
                                   password=password, auth=auth)
    return _http.nest(json_mapping(body, f"the body of {shown}"), namespace)
