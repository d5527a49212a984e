base:
  '*':
    - main
    - envuse
