never:
  test.nop: []
