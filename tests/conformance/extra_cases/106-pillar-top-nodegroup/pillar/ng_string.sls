ng:
  string: 1
