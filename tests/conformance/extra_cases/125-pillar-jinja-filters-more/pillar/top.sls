base:
  '*':
    - filters
