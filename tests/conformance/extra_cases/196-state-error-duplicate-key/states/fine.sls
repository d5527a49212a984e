fine:
  test.nop: []
