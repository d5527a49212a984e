base:
  'G@os:Debian':
    - debstate
