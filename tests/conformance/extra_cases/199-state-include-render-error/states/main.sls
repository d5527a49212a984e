include:
  - broken
main:
  test.nop: []
