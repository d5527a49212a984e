base:
  '*':
    - a
    - withmissing
