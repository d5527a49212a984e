base:
  '*':
    - common
  'G@role:web':
    - match: compound
    - web
    - formulas.nginx
  'db*':
    - db
