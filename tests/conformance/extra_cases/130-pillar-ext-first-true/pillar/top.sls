base:
  '*':
    - common
  'role:frontend':
    - match: pillar
    - by_pillar
  'dc:ams\d':
    - match: pillar_pcre
    - by_pcre
  'I@role:front* and G@os:Debian':
    - by_compound
  'role:backend':
    - match: pillar
    - never
