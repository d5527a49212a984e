same_id:
  test.nop: []
same_id:
  test.succeed_without_changes: []
