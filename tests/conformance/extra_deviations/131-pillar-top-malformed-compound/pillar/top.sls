base:
  '*':
    - good
  'G@os:Debian and':
    - never
