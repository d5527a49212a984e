{% set sb = grains['sandbox'] %}
changed:
  test.succeed_with_changes: []
quiet:
  test.succeed_without_changes: []

svc_listener:
  cmd.run:
    - name: echo ran >> {{ sb }}/listener.log
    - listen:
      - test: changed

quiet_listener:
  test.succeed_without_changes:
    - listen:
      - test: quiet

target_of_in:
  test.succeed_without_changes: []

declares_in:
  test.succeed_with_changes:
    - listen_in:
      - test: target_of_in

after:
  test.nop: []
