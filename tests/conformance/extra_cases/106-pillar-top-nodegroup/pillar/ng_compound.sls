ng:
  compound: 1
