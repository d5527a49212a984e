b:
  test.nop: []
