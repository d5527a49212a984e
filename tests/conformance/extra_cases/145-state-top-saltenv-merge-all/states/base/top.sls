base:
  '*':
    - common
