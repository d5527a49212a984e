{% set map = salt['grains.filter_by']({
    'Debian': {'pkg': 'nginx', 'port': 80},
    'RedHat': {'pkg': 'nginx-rh'},
    'default': {'pkg': 'generic'},
  }, merge=salt['pillar.get']('lookup', {})) %}
{% set merged = salt['defaults.merge']({'a': 1, 'b': {'x': 1}}, {'b': {'y': 2}}) %}
{% set rh = salt['grains.filter_by']({'RedHat': 'rh'}, grain='os_family', default='RedHat') %}
funcs:
  test.nop:
    - pkg: {{ map.pkg }}
    - port: {{ map.port }}
    - merged: {{ merged | json }}
    - rh: {{ rh }}
    - cfg: {{ salt['config.get']('only_in_pillar', 'none') }}
    - echoed: {{ salt['cmd.run']('echo rendered-by-cmd') }}
    - exists: {{ salt['file.file_exists']('/etc/hostname') }}
    - dir: {{ salt['file.directory_exists']('/etc') }}
    - ping: {{ salt['test.ping']() }}
