base:
  webs:
    - match: nodegroup
    - ng_string
  listed:
    - match: nodegroup
    - ng_list
  dbs:
    - match: nodegroup
    - ng_dbs
  nested:
    - match: nodegroup
    - ng_nested
  'N@nested_dbs':
    - ng_nested_dbs
  'N@webs and not N@dbs':
    - ng_compound
