include:
  - dev: app.dev
  - common
main_state:
  test.nop:
    - require:
      - test: dev_app
