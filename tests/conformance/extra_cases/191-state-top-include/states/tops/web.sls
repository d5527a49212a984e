base:
  'web*':
    - webstate
