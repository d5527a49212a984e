changes_ok:
  test.configurable_test_state:
    - changes: true
    - result: true
    - comment: changed ok

nochange_ok:
  test.configurable_test_state:
    - changes: false
    - result: true

changes_fail:
  test.configurable_test_state:
    - changes: true
    - result: false

nochange_fail:
  test.configurable_test_state:
    - changes: false
    - result: false

defaults_only:
  test.configurable_test_state: []

after_changes:
  test.succeed_without_changes:
    - onchanges:
      - test: changes_ok
