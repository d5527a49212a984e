include:
  - tops.extra
base:
  '*':
    - common
