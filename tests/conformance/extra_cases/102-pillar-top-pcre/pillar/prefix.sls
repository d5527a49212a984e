prefix: true
hits:
  prefix: 1
