# Prometheus on the monitoring host, from the pillar key `prometheus`.
{% from 'map.jinja' import root with context %}

prometheus_config:
  file.managed:
    - name: {{ root }}/etc/prometheus/prometheus.yml
    - source: salt://monitoring/files/prometheus.yml.jinja
    - template: jinja
    - makedirs: True

prometheus_data_dir:
  file.directory:
    - name: {{ root }}/var/lib/prometheus
    - makedirs: True

# Stands in for `promtool check config`: runs only when the config changed.
prometheus_config_check:
  cmd.run:
    - name: grep -q "^scrape_configs:" "{{ root }}/etc/prometheus/prometheus.yml"
    - onchanges:
      - file: prometheus_config

prometheus_service:
  test.succeed_without_changes:
    - name: prometheus
    - require:
      - file: prometheus_data_dir
    - watch:
      - file: prometheus_config
