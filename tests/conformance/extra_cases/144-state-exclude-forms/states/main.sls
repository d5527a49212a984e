include:
  - roles.web
  - roles.db
  - misc
  - extender
exclude:
  - sls: roles.*
  - id: misc_two
  - extender
main_state:
  test.nop: []
