{% from 'macros.jinja' import port_for, shared_name %}
{% import_yaml 'data/defaults.yaml' as defaults %}
{% import_json 'data/extra.json' as extra %}
{% import_text 'data/motd.txt' as motd %}
{% load_yaml as inline %}
inline_key: inline_value
num: 7
{% endload %}
ports:
  web: {{ port_for('web') }}
  cache: {{ port_for('cache', 9000) }}
shared_name: {{ shared_name }}
defaults: {{ defaults | json }}
extra_n: {{ extra.n }}
extra_key: {{ extra['json_key'] }}
motd: {{ motd | trim }}
inline: {{ inline | json }}
{% include 'data/snippet.jinja' %}
tier: {{ salt['grains.get']('deep:tier', 'none') }}
missing_grain: {{ salt['grains.get']('deep:nope', 'dflt') }}
opt: {{ salt['config.get']('custom_option', 'unset') }}
seen_first: {{ salt['pillar.get']('first_value', 'not-yet') }}
seen_pillar: {{ pillar.get('first_value', 'not-yet') }}
