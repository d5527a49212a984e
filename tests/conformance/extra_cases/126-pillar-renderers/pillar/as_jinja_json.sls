#!jinja|json
{
  "jinja_json": {
    "os": "{{ grains['os'] }}",
    "roles": {{ grains['roles'] | json }},
    "items": [{% for i in range(3) %}{{ i * 2 }}{% if not loop.last %}, {% endif %}{% endfor %}]
  }
}
