base:
  '*':
    - common
    - app
    - common
  'web*':
    - app
    - web
