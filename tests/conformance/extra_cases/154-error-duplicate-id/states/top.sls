base:
  '*':
    - one
    - two
