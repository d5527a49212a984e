pil:
  test.nop: []
