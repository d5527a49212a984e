bad:
  test.nop:
    - value: {{ pillar['nope'] }}
