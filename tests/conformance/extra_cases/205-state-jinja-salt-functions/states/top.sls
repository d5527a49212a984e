base:
  '*':
    - funcs
