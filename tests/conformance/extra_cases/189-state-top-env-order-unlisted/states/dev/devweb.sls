devweb:
  test.nop: []
