{% set sb = grains['sandbox'] %}
skipped_by_unless:
  cmd.run:
    - name: echo unless >> {{ sb }}/unless.log
    - unless: test -f {{ sb }}/marker

runs_unless_false:
  cmd.run:
    - name: echo unless2 >> {{ sb }}/unless2.log
    - unless: test -f {{ sb }}/nope

skipped_by_onlyif:
  cmd.run:
    - name: echo onlyif >> {{ sb }}/onlyif.log
    - onlyif: test -f {{ sb }}/nope

runs_onlyif_list:
  cmd.run:
    - name: echo onlyif2 >> {{ sb }}/onlyif2.log
    - onlyif:
      - test -f {{ sb }}/marker
      - 'true'

skipped_onlyif_list:
  cmd.run:
    - name: echo onlyif3 >> {{ sb }}/onlyif3.log
    - onlyif:
      - test -f {{ sb }}/marker
      - 'false'

file_with_unless:
  file.managed:
    - name: {{ sb }}/guarded.txt
    - contents: guarded
    - unless: test -f {{ sb }}/marker

test_with_onlyif:
  test.succeed_with_changes:
    - onlyif: 'true'
