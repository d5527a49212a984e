# The metrics agent on every host but the monitoring server: one flags file
# per exporter in the pillar key monitoring:exporters.
{% from 'map.jinja' import root with context %}

exporter_dir:
  file.directory:
    - name: {{ root }}/etc/prometheus/exporters
    - makedirs: True

{% for name, exporter in pillar['monitoring']['exporters'] | dictsort %}
exporter_{{ name }}:
  file.managed:
    - name: {{ root }}/etc/prometheus/exporters/{{ name }}.args
    - contents: --web.listen-address={{ exporter['listen'] }}
    - require:
      - file: exporter_dir
{% endfor %}
