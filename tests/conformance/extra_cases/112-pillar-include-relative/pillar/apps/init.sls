include:
  - .sub
apps_init: 1
order:
  - init
