base:
  '*':
    - order
