include:
  - devlib
dev_app:
  test.nop: []
