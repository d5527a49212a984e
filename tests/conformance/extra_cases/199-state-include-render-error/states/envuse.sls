envuse:
  test.nop:
    - env_is: {{ env }}
