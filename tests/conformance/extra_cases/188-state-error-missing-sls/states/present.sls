include:
  - also.not.there
extend:
  ghost_id:
    test.nop:
      - extra: 1
present_state:
  test.nop: []
