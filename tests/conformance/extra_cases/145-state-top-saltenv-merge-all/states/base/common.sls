common:
  test.nop: []
