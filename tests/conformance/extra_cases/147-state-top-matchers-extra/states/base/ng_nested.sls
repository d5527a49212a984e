ng_nested:
  test.nop: []
