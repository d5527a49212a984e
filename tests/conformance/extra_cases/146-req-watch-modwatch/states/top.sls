base:
  '*':
    - watch
