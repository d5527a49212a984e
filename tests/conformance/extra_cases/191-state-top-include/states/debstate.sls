debstate:
  test.nop: []
