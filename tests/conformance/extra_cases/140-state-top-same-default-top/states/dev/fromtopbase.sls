fromtopbase:
  test.nop: []
