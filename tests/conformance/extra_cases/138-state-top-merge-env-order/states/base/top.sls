base:
  '*':
    - common
dev:
  'web*':
    - devweb
