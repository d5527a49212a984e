extend:
  svc:
    test.nop:
      - from_optional: true
optional_state:
  test.nop: []
