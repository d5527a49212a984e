dev:
  'G@role:web':
    - match: compound
    - web
