base:
  '*':
    - reqin
