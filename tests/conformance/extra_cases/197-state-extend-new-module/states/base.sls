svc:
  test.nop: []
pkg:
  test.nop:
    - keep: 1
dropped:
  test.nop: []
