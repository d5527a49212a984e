ignored:
  test.nop: []
