# A reusable fragment: where a metrics exporter listens.
#
# Not in the top file; include it with the variables it needs:
#
#   include:
#     - monitoring.exporter:
#         key: monitoring:exporters:NAME
#         defaults:
#           port: 9121
listen: {{ grains['ipv4'][1] }}:{{ port }}
scrape: true
