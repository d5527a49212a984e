lib_one:
  test.nop: []
lib_two:
  test.nop: []
