{% set items = [] %}
{% for i in range(10) %}
{% if i == 5 %}{% break %}{% endif %}
{% if i % 2 %}{% continue %}{% endif %}
{% do items.append(i) %}
{% endfor %}
loop_items: {{ items | json }}
yaml_encoded: {{ "a: b" | yaml_encode }}
yaml_dq: {{ 'say "hi"' | yaml_dquote }}
to_bool:
  yes_str: {{ 'yes' | to_bool }}
  zero: {{ 0 | to_bool }}
  one_str: {{ '1' | to_bool }}
  off_str: {{ 'off' | to_bool }}
seq: {{ 'single' | sequence | json }}
uniq: {{ [3, 1, 3, 2, 1] | unique | json }}
rx_replace: {{ 'web-01.example' | regex_replace('[0-9]+', 'N') }}
rx_search: {{ 'abc123def' | regex_search('[0-9]+') | json }}
rx_match: {{ 'abc123' | regex_match('([a-z]+)([0-9]+)') | json }}
md5: {{ 'hello' | md5 }}
sha256: {{ 'hello' | sha256 }}
b64: {{ 'hello' | base64_encode }}
b64d: {{ 'aGVsbG8=' | base64_decode }}
is_list: {{ [1] is list }}
minmax: [{{ [4, 2, 9] | min }}, {{ [4, 2, 9] | max }}, {{ [4, 2, 9] | sum }}]
tojson: {{ {'k': [1, 'two']} | tojson }}
