base:
  '*':
    - good
    - missing_one
