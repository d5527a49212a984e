include:
  - roles.a
  - roles.b

needs_webs:
  test.succeed_without_changes:
    - require:
      - test: web_*

needs_roles:
  test.succeed_without_changes:
    - require:
      - sls: roles.*

web_one:
  test.succeed_without_changes: []

unrelated:
  test.succeed_without_changes: []

web_two:
  test.succeed_without_changes:
    - name: web_named_two
