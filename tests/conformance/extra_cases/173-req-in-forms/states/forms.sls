changer:
  test.succeed_with_changes:
    - watch_in:
      - test: watcher
    - onchanges_in:
      - test: on_change
    - listen_in:
      - test: listener

failer:
  test.fail_without_changes:
    - onfail_in:
      - test: on_fail

watcher:
  test.succeed_without_changes: []

on_change:
  test.succeed_with_changes: []

on_fail:
  test.succeed_with_changes: []

listener:
  test.succeed_without_changes: []

pre:
  test.succeed_with_changes:
    - prereq_in:
      - test: guarded

guarded:
  test.succeed_with_changes: []
