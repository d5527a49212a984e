{% set sb = grains['sandbox'] %}
before:
  file.managed:
    - name: {{ sb }}/before.txt
    - contents: before

soft_fail:
  test.fail_without_changes: []

hard_fail:
  test.fail_without_changes:
    - failhard: true

handler:
  test.succeed_with_changes:
    - onfail:
      - test: hard_fail

after:
  file.managed:
    - name: {{ sb }}/after.txt
    - contents: after
