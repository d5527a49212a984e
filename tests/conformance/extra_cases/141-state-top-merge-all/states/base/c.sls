c:
  test.nop: []
