base:
  '*':
    - common
dev:
  '*':
    - fromtopbase
qa:
  'web*':
    - qafallback
