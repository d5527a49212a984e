base:
  '*':
    - use
