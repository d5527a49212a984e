db_vars:
  sls: {{ sls }}
  slspath: {{ slspath }}
  tpldir: {{ tpldir }}
  tplfile: {{ tplfile }}
  tpldot: {{ tpldot }}
