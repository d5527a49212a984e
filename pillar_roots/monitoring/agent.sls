# The metrics agent every host but the monitoring server runs.
monitoring:
  server: mon01.fra1.example.net
  exporters:
    node:
      listen: {{ grains['ipv4'][1] }}:9100
      scrape: true
