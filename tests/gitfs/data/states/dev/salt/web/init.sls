{% from 'map.jinja' import settings with context %}
web_site_{{ saltenv }}:
  file.managed:
    - name: {{ settings.conf }}/sites-available/{{ grains['id'] }}-dev
    - contents: "dev branch, env {{ saltenv }}"

web_dev_check:
  test.succeed_with_changes:
    - name: check {{ sls }} in {{ saltenv }}
    - require:
      - file: web_site_{{ saltenv }}
