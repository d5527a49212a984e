ok:
  test.succeed_without_changes: []

changer:
  test.succeed_with_changes: []

onfail_target:
  test.succeed_with_changes:
    - onfail:
      - test: ok
    - listen_in:
      - test: changer

prereq_on_onfail:
  test.succeed_without_changes:
    - prereq:
      - test: onfail_target

onchanges_target:
  test.succeed_with_changes:
    - onchanges:
      - test: ok

prereq_on_onchanges:
  test.succeed_with_changes:
    - prereq:
      - test: onchanges_target

chained:
  test.succeed_without_changes:
    - prereq:
      - test: prereq_on_onchanges

after:
  test.nop: []
