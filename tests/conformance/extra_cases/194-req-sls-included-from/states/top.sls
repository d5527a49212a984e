base:
  '*':
    - final
    - main
