toplevel:
  test.nop: []
