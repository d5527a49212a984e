qaapp:
  test.nop: []
