frombase:
  test.nop: []
