qaown:
  test.nop: []
