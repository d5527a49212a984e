base:
  'web*':
    - webdata
