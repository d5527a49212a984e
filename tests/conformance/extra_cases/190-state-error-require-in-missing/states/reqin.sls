pusher:
  test.nop:
    - require_in:
      - test: nobody_here
existing:
  test.nop: []
