pil_i:
  test.nop: []
