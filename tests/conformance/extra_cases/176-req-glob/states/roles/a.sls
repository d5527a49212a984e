role_a:
  test.nop: []
