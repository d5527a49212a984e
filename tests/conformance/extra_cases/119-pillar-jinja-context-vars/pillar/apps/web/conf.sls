{% from './macros.jinja' import label %}
{% import_yaml '../shared.yaml' as shared %}
web_vars:
  sls: {{ sls }}
  slspath: {{ slspath }}
  slsdotpath: {{ slsdotpath }}
  slscolonpath: {{ slscolonpath }}
  sls_path: {{ sls_path }}
  tpldir: {{ tpldir }}
  tplfile: {{ tplfile }}
  tpldot: {{ tpldot }}
  saltenv: {{ saltenv }}
  label: {{ label('web') }}
  shared: {{ shared.value }}
