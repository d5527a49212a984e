# PostgreSQL for the database hosts.
#
# The passwords live in secrets/postgres.sls; `key: postgres` nests
# everything that file sets under `postgres`, next to the settings below.
{% import_yaml 'common/datacenters.yaml' as datacenters %}

{#- The PostgreSQL major version each OS release packages: filter_by picks the
    entry whose key matches the osrelease grain (keys may be globs). #}
{% set postgres_version = salt['grains.filter_by']({
    '12': 15,
    '22.04': 14,
    '24.04': 16,
    '9*': 16,
    'default': 15,
}, grain='osrelease') %}

include:
  - secrets.postgres:
      key: postgres

postgres:
  version: {{ postgres_version }}
  port: 5432
  listen_addresses: 127.0.0.1,{{ grains['ipv4'][1] }}
  max_connections: 200
  # a quarter of the memory (mem_total is in MiB)
  shared_buffers: {{ grains['mem_total'] // 4 }}MB
  databases:
    shop:
      owner: shop
      encoding: UTF8
  users:
    shop:
      login: true
    monitoring:
      login: true
      in_roles: [pg_monitor]
  # who may connect from where; every datacenter network may reach the shop db
  hba:
    - {type: local, database: all, user: postgres, method: peer}
{%- for name, dc in datacenters | dictsort %}
    - {type: host, database: shop, user: shop, address: {{ dc.network }}, method: scram-sha-256}
{%- endfor %}
