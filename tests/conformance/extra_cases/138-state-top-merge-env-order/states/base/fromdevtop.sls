fromdevtop:
  test.nop: []
