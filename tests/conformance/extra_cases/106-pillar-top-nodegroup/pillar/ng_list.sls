ng:
  list: 1
