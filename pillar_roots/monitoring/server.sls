# Prometheus on the monitoring host.
{% from 'defaults.jinja' import site %}
prometheus:
  retention: 30d
  scrape_interval: 30s
  # the fleet, per datacenter
  targets:
    ams1: [web01, db01, lb01, cache01]
    fra1: [web02, db02]
  alert_email: {{ site.admin_email }}
