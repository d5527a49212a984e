qafallback:
  test.nop: []
