{% from 'map.jinja' import settings with context %}
include:
  - common

web_package:
  pkg.installed:
    - name: {{ settings.pkg }}
    - require:
      - file: motd

web_site_{{ saltenv }}:
  file.managed:
    - name: {{ settings.conf }}/sites-enabled/{{ grains['id'] }}
    - contents: "served from {{ saltenv }} for {{ pillar.get('site', {}).get('name', 'none') }}"
    - require:
      - pkg: web_package
