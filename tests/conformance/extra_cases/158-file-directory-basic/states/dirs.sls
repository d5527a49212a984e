{% set sb = grains['sandbox'] %}
new_dir:
  file.directory:
    - name: {{ sb }}/newdir
    - mode: '0750'

existing_dir:
  file.directory:
    - name: {{ sb }}/existing
    - mode: '0755'

wrongmode_dir:
  file.directory:
    - name: {{ sb }}/wrongmode
    - mode: '0700'

no_parent:
  file.directory:
    - name: {{ sb }}/missing/parent/child
