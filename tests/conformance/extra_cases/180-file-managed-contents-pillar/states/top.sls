base:
  '*':
    - files
