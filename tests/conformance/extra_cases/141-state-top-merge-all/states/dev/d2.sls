d2:
  test.nop: []
