base:
  '*':
    - lines
