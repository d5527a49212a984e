include:
  - lib
main_state:
  test.nop: []
