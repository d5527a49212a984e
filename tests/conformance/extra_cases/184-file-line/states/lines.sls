{% set f = grains['sandbox'] ~ '/app.conf' %}
ensure_after:
  file.line:
    - name: {{ f }}
    - content: timeout 30
    - mode: ensure
    - after: listen 80

insert_start:
  file.line:
    - name: {{ f }}
    - content: '# managed by salt'
    - mode: insert
    - location: start

replace_workers:
  file.line:
    - name: {{ f }}
    - content: workers 8
    - match: ^workers
    - mode: replace

delete_debug:
  file.line:
    - name: {{ f }}
    - match: ^debug
    - mode: delete

already_there:
  file.line:
    - name: {{ f }}
    - content: listen 80
    - mode: ensure
    - after: '# app config'
