role_web:
  test.nop: []
