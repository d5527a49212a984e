role_cache:
  test.nop: []
