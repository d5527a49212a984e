args_as_dict:
  test.nop:
    name: oops

two_functions:
  test:
    - nop
    - succeed_with_changes

req_not_list:
  test.nop:
    - require:
        test: two_functions

fine:
  test.nop: []
