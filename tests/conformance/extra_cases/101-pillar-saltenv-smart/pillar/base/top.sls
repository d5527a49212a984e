base:
  '*':
    - basedata
