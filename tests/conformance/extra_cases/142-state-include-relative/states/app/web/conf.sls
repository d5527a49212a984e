web_conf:
  test.nop: []
