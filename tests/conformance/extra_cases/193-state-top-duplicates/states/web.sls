web:
  test.nop: []
