consumer:
  test.succeed_without_changes:
    - require:
      - test: the-real-name
      - other-name
      - id: plain_id

renamed:
  test.succeed_with_changes:
    - name: the-real-name

second:
  test.succeed_without_changes:
    - name: other-name

plain_id:
  test.nop: []

requires_in_by_name:
  test.nop:
    - require_in:
      - test: the-real-name
