base:
  '*':
    - listen
