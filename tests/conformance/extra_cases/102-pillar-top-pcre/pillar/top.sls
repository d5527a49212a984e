base:
  'web\d+\.example\.org':
    - match: pcre
    - full
  'web':
    - match: pcre
    - prefix
  'example':
    - match: pcre
    - middle
  'db.*':
    - match: pcre
    - db
  'E@^web0[0-9] and G@os:Debian':
    - compound_e
  'E@.*\.org$ and not E@^db':
    - compound_not
