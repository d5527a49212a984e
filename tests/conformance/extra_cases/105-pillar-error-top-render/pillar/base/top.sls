base:
  '*':
    - basedata
  - broken: [
