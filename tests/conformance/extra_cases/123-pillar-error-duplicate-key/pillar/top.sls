base:
  '*':
    - dup
    - fine
