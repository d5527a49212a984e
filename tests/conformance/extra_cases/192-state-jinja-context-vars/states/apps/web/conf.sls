conf_vars:
  test.nop:
    - sls: {{ sls }}
    - slspath: {{ slspath }}
    - tpldir: {{ tpldir }}
    - tplfile: {{ tplfile }}
