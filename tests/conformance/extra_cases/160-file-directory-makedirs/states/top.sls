base:
  '*':
    - dirs
