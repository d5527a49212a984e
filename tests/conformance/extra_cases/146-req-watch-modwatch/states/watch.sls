{% set sb = grains['sandbox'] %}
conf:
  file.managed:
    - name: {{ sb }}/app.conf
    - contents: v1

unchanged:
  test.succeed_without_changes: []

run_on_change:
  cmd.run:
    - name: echo run >> {{ sb }}/run.log
    - watch:
      - file: conf

wait_on_change:
  cmd.wait:
    - name: echo wait >> {{ sb }}/wait.log
    - watch:
      - file: conf

wait_no_change:
  cmd.wait:
    - name: echo nochange >> {{ sb }}/nochange.log
    - watch:
      - test: unchanged

test_watcher:
  test.succeed_without_changes:
    - watch:
      - file: conf

file_watcher:
  file.managed:
    - name: {{ sb }}/second.conf
    - contents: v2
    - watch:
      - test: unchanged

pusher:
  test.succeed_with_changes:
    - watch_in:
      - cmd: pushed_target

pushed_target:
  cmd.run:
    - name: echo pushed >> {{ sb }}/pushed.log
