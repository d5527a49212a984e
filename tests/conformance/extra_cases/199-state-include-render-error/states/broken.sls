broken:
  test.nop:
    - value: {{ no_such_variable }}
