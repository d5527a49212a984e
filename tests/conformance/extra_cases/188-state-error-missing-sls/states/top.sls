base:
  '*':
    - present
    - not_there
