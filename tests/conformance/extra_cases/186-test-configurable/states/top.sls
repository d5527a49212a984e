base:
  '*':
    - conf
