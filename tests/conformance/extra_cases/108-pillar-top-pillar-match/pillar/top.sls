base:
  '*':
    - common
  'role:web':
    - match: pillar
    - by_pillar
  'role:w.*':
    - match: pillar_pcre
    - by_pillar_pcre
  'I@role:web':
    - by_i
  'J@role:^web$':
    - by_j
