declared_first:
  test.succeed_with_changes:
    - listen_in:
      - test: target_b

runs_first:
  test.succeed_with_changes:
    - order: first
    - listen_in:
      - test: target_a

target_a:
  test.succeed_without_changes: []

target_b:
  test.succeed_without_changes: []

own_listen:
  test.succeed_without_changes:
    - listen:
      - test: declared_first
