"""ext_pillar http_yaml: the YAML mapping a URL answers for the minion.

Same options as http_json (``url`` with ``%s`` and ``<grain>``, ``with_grains``,
``namespace``, ``timeout``, ``verify_ssl``, ``ca_bundle``, ``header_dict``,
``username``/``password``/``auth``):

    ext_pillar:
      - http_yaml:
          url: https://inventory.example.com/api/hosts/%s.yaml
"""

from __future__ import annotations

from ext_pillar import _http
from ext_pillar._payload import yaml_mapping

ext_pillar = _http.mapping_driver(yaml_mapping)
