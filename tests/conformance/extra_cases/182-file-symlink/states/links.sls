{% set sb = grains['sandbox'] %}
new_link:
  file.symlink:
    - name: {{ sb }}/new_link
    - target: {{ sb }}/target.txt

nested_link:
  file.symlink:
    - name: {{ sb }}/sub/dir/link
    - target: {{ sb }}/target.txt
    - makedirs: true

prepare_wrong:
  cmd.run:
    - name: ln -s {{ sb }}/other.txt {{ sb }}/wrong_link && ln -s {{ sb }}/other.txt {{ sb }}/forced_link && ln -s {{ sb }}/target.txt {{ sb }}/right_link
    - creates: {{ sb }}/wrong_link

right_link:
  file.symlink:
    - name: {{ sb }}/right_link
    - target: {{ sb }}/target.txt
    - require:
      - cmd: prepare_wrong

wrong_no_force:
  file.symlink:
    - name: {{ sb }}/wrong_link
    - target: {{ sb }}/target.txt
    - require:
      - cmd: prepare_wrong

wrong_forced:
  file.symlink:
    - name: {{ sb }}/forced_link
    - target: {{ sb }}/target.txt
    - force: true
    - require:
      - cmd: prepare_wrong
