app:
  test.nop: []
