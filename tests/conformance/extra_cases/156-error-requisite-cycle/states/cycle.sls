state_a:
  test.succeed_without_changes:
    - require:
      - test: state_b
state_b:
  test.succeed_without_changes:
    - watch:
      - test: state_c
state_c:
  test.succeed_without_changes: []
closer:
  test.nop:
    - require_in:
      - test: state_c
    - require:
      - test: state_a
independent:
  test.nop: []
