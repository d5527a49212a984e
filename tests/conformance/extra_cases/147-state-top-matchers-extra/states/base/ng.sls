ng:
  test.nop: []
