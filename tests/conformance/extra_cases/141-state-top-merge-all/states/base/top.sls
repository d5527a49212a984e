base:
  '*':
    - a
    - b
  'os:Debian':
    - match: grain
    - g1
dev:
  '*':
    - d1
