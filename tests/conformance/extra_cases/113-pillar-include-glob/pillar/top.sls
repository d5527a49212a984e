base:
  '*':
    - main
    - extra.*
