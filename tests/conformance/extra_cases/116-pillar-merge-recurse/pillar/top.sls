base:
  '*':
    - one
    - two
    - three
