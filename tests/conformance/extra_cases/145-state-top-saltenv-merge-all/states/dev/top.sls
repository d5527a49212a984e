base:
  '*':
    - frombase
dev:
  '*':
    - devapp
