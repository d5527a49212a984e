dev_top:
  test.nop: []
