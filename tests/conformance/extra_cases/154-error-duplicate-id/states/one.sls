include:
  - shared
dup_id:
  test.succeed_without_changes:
    - name: from one
