w:
  test.nop: []
