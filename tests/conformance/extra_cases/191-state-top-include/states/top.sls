include:
  - tops.*
base:
  '*':
    - common
