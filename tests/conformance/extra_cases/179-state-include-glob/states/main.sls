include:
  - roles.*
main_state:
  test.nop:
    - require:
      - sls: roles.web
