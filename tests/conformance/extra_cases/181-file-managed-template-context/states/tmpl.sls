{% set sb = grains['sandbox'] %}
with_context:
  file.managed:
    - name: {{ sb }}/ctx.conf
    - source: salt://files/app.conf.j2
    - template: jinja
    - defaults:
        port: 80
        mode: default
    - context:
        port: 8080

only_defaults:
  file.managed:
    - name: {{ sb }}/defaults.conf
    - source: salt://files/app.conf.j2
    - template: jinja
    - mode: '0640'
    - defaults:
        port: 81
        mode: dflt
