ng:
  nested: 1
