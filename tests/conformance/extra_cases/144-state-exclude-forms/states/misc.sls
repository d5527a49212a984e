misc_one:
  test.nop: []
misc_two:
  test.nop: []
