devignored:
  test.nop: []
