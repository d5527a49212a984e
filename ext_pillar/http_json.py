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

from ext_pillar import _http
from ext_pillar._payload import json_mapping

ext_pillar = _http.mapping_driver(json_mapping)
