include:
  - .conf
  - ..common
web_init:
  test.nop: []
