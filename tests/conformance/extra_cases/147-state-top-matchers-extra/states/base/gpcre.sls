gpcre:
  test.nop: []
