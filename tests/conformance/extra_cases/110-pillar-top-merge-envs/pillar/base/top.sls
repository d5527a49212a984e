base:
  '*':
    - common
  'web*':
    - webbase
dev:
  '*':
    - devcommon
