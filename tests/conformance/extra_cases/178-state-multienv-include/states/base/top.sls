base:
  '*':
    - main
dev:
  '*':
    - devtop
