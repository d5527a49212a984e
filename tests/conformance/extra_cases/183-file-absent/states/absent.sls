{% set sb = grains['sandbox'] %}
remove_file:
  file.absent:
    - name: {{ sb }}/old.txt

remove_dir:
  file.absent:
    - name: {{ sb }}/olddir

already_gone:
  file.absent:
    - name: {{ sb }}/never_existed.txt
