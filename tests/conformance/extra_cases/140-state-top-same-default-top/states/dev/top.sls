dev:
  '*':
    - devapp
base:
  '*':
    - ignored
