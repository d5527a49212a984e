base:
  'db*':
    - database
  '*':
    - shared
