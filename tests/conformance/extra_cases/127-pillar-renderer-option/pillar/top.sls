base:
  '*':
    - plain
    - templated
