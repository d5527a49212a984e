final_state:
  test.nop:
    - require:
      - sls: main

pushes:
  test.nop:
    - require_in:
      - sls: lib
