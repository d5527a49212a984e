auto_one:
  test.nop: []

at_last:
  test.nop:
    - order: last

auto_two:
  test.nop: []

ordered_ten:
  test.nop:
    - order: 10

ordered_one:
  test.nop:
    - order: 1
    - require:
      - test: pulled

pulled:
  test.nop: []

at_first:
  test.nop:
    - order: first

many:
  test.nop:
    - order: 5
    - names:
      - m_b
      - m_a
