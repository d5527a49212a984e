shared_state:
  test.nop: []
