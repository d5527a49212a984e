webstate:
  test.nop: []
