base:
  '*':
    - first
    - main
