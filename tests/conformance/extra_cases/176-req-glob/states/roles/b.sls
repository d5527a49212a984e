role_b:
  test.nop: []
