# Redis for the cache hosts.
#
# The include below renders monitoring/exporter.sls with the variables given
# under `defaults`, and nests its data under `key`.
include:
  - monitoring.exporter:
      key: monitoring:exporters:redis
      defaults:
        port: 9121

redis:
  bind: 127.0.0.1 {{ grains['ipv4'][1] }}
  port: 6379
  # leave a quarter of the memory to the OS (mem_total is in MiB)
  maxmemory: {{ grains['mem_total'] * 3 // 4 }}mb
  maxmemory_policy: allkeys-lru
  requirepass: demo-only-Rb5nV8wE
