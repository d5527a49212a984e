role_db:
  test.nop: []
