base:
  '*':
    - basedata
dev:
  'web*':
    - fromtop
