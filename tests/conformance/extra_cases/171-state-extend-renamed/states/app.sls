include:
  - base

extend:
  config_file:
    test.succeed_with_changes:
      - level: 2
      - require:
        - test: prep
  app-service:
    test.succeed_without_changes:
      - watch:
        - test: config_file

prep:
  test.nop: []
