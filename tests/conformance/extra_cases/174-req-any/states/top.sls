base:
  '*':
    - anys
