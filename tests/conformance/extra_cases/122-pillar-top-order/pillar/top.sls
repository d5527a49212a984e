base:
  'web*':
    - order: 10
    - late
  '*':
    - early
  'G@os:Debian':
    - order: -5
    - first
  'web01':
    - order: 1
    - middle
  'L@web01,web02':
    - zero
