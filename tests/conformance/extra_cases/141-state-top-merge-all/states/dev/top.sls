base:
  '*':
    - b
    - c
  'os:Debian':
    - match: grain
    - g2
  'web*':
    - w
dev:
  '*':
    - d2
    - d1
