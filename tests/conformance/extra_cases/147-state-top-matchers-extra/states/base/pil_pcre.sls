pil_pcre:
  test.nop: []
