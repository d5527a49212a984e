# Data every minion gets (see top.sls).
#
# The includes start with a dot: they are relative to this package, so
# `.users` is common/users.sls.  Included data is merged first; the keys
# written in this file win over them.
{% from 'defaults.jinja' import site %}
include:
  - .users
  - .os
  - .datacenter

site:
  domain: {{ site.domain }}
  admin_email: {{ site.admin_email }}
  timezone: {{ site.timezone }}

motd:
  banner: Welcome to {{ grains['id'] }}, the {{ grains['role'] }} host in {{ grains['datacenter'] }}.
  contact: {{ site.admin_email }}

sshd:
  port: {{ site.ssh_port }}
  permit_root_login: 'no'
  password_authentication: false
