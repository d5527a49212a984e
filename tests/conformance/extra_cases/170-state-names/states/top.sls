base:
  '*':
    - names
