dev:
  '*':
    - devignored
base:
  'web*':
    - fromdevtop
