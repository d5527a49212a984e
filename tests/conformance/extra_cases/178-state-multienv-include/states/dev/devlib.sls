dev_lib:
  test.nop: []
