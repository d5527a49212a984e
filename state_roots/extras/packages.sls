# OPTIONAL, not in top.sls: what the sandboxed demo states stand in for on a
# real host.  Applying it needs root, a package manager and an init system:
#
#   salt-call --local state.apply extras.packages
#
# It installs the base and role packages, runs the role's service, and
# creates (or removes) the login accounts from the pillar.
{% set role = grains.get('role', '') %}
{% set packages = {'web': ['nginx'], 'db': ['postgresql'], 'lb': ['haproxy'], 'cache': ['redis'],
                   'monitoring': ['prometheus']}.get(role, []) %}

base_packages:
  pkg.installed:
    - pkgs: {{ pillar.get('os', {}).get('base_packages', []) | json }}

{% if packages %}
role_packages:
  pkg.installed:
    - pkgs: {{ packages | json }}

{% set service = {'db': 'postgresql', 'cache': 'redis-server' if grains['os_family'] == 'Debian' else 'redis'}.get(role, packages[0]) %}
role_service:
  service.running:
    - name: {{ service }}
    - enable: True
    - require:
      - pkg: role_packages
{% endif %}

{% for name, user in pillar.get('users', {}) | dictsort %}
user_{{ name }}:
  user.present:
    - name: {{ name }}
    - uid: {{ user['uid'] }}
    - fullname: {{ user['fullname'] }}
    - shell: {{ user['shell'] }}
    - groups: {{ user['groups'] | json }}
    - createhome: True

ssh_keys_{{ name }}:
  ssh_auth.present:
    - user: {{ name }}
    - names: {{ user['ssh_keys'] | json }}
    - require:
      - user: user_{{ name }}
{% endfor %}

{% for name in pillar.get('absent_users', []) %}
user_{{ name }}_absent:
  user.absent:
    - name: {{ name }}
    - purge: True
{% endfor %}
