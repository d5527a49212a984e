base:
  '*':
    - onfail
