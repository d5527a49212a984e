qa:
  '*':
    - qaapp
base:
  '*':
    - common
dev:
  'web*':
    - devweb
