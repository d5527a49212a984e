full: true
hits:
  full: 1
