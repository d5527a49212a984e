{% set sb = grains['sandbox'] %}
deep_dir:
  file.directory:
    - name: {{ sb }}/a/b/c
    - mode: '0700'
    - makedirs: true

deep_dir_default:
  file.directory:
    - name: {{ sb }}/x/y
    - makedirs: true

deep_file:
  file.managed:
    - name: {{ sb }}/f1/f2/file.txt
    - contents: hi
    - mode: '0600'
    - makedirs: true
