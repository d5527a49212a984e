other:
  test.nop: []
