app_lib:
  test.nop: []
