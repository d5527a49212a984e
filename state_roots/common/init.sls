# What every minion gets: base directories, the message of the day, the
# resolver and sshd settings from pillar, and each user's SSH keys.
{% from 'map.jinja' import root with context %}

base_dirs:
  file.directory:
    - names:
      - {{ root }}/etc/ssh/sshd_config.d
      - {{ root }}/var/log
      - {{ root }}/var/run
      - {{ root }}/srv
    - makedirs: True
    # require_in: the files below wait for these directories without each
    # of them having to say so
    - require_in:
      - file: motd
      - file: resolv_conf
      - file: sshd_site_config

# A Jinja template served from this tree (salt://); it reads grains and pillar.
motd:
  file.managed:
    - name: {{ root }}/etc/motd
    - source: salt://common/files/motd.jinja
    - template: jinja
    - mode: '0644'

resolv_conf:
  file.managed:
    - name: {{ root }}/etc/resolv.conf
    - source: salt://common/files/resolv.conf.jinja
    - template: jinja

# A config built from pillar values directly in the sls.
sshd_site_config:
  file.managed:
    - name: {{ root }}/etc/ssh/sshd_config.d/50-site.conf
    - mode: '0600'
    - contents: |
        # Managed by Salt from the pillar key `sshd`; local edits are overwritten.
        Port {{ pillar['sshd']['port'] }}
        PermitRootLogin {{ pillar['sshd']['permit_root_login'] }}
        PasswordAuthentication {{ 'yes' if pillar['sshd']['password_authentication'] else 'no' }}

# One home directory and authorized_keys file per user in the pillar.
{% for name, user in pillar.get('users', {}) | dictsort %}
ssh_dir_{{ name }}:
  file.directory:
    - name: {{ root }}/home/{{ name }}/.ssh
    - makedirs: True
    - mode: '0700'

authorized_keys_{{ name }}:
  file.managed:
    - name: {{ root }}/home/{{ name }}/.ssh/authorized_keys
    - mode: '0600'
    - contents: |
        {%- for key in user['ssh_keys'] %}
        {{ key }}
        {%- endfor %}
    - require:
      - file: ssh_dir_{{ name }}
{% endfor %}
