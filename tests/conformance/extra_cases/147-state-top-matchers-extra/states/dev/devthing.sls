devthing:
  test.nop: []
