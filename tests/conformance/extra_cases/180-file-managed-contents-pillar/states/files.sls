{% set sb = grains['sandbox'] %}
from_pillar:
  file.managed:
    - name: {{ sb }}/app.conf
    - contents_pillar: files:app_conf

from_pillar_key:
  file.managed:
    - name: {{ sb }}/key.txt
    - contents_pillar: files:key
    - mode: '0600'

from_grains:
  file.managed:
    - name: {{ sb }}/motd
    - contents_grains: motd

from_list:
  file.managed:
    - name: {{ sb }}/list.txt
    - contents:
      - line one
      - line two

no_newline:
  file.managed:
    - name: {{ sb }}/nonl.txt
    - contents: no newline at end
    - contents_newline: false
