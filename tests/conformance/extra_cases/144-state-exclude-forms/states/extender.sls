extend:
  misc_one:
    test.nop:
      - from_extender: true
extender_own:
  test.nop: []
