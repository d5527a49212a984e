compound_e: true
hits:
  compound_e: 1
