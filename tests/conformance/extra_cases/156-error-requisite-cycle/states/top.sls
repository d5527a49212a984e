base:
  '*':
    - cycle
