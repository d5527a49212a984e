base:
  '*':
    - byname
