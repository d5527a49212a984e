a:
  test.nop: []
