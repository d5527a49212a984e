base:
  '*':
    - fromdev
dev:
  '*':
    - devonly
