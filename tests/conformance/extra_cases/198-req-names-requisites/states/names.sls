needs_one_name:
  test.nop:
    - require:
      - test: second_name

group:
  test.succeed_with_changes:
    - names:
      - first_name
      - second_name
      - third_name

needs_group:
  test.nop:
    - require:
      - test: group

pushed_into_group:
  test.nop:
    - require_in:
      - test: group

watches_one:
  test.succeed_without_changes:
    - watch:
      - test: third_name
