#!jinja|json
{
{% for app in pillar['apps'] %}
  "json_{{ app }}": {
    "file.managed": [
      {"name": "{{ grains['sandbox'] }}/{{ app }}.txt"},
      {"contents": "app {{ app }}"}
    ]
  }{% if not loop.last %},{% endif %}
{% endfor %}
}
