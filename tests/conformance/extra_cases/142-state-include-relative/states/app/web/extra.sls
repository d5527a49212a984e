include:
  - ..lib
  - ...toplevel
  - .conf
web_extra:
  test.nop: []
