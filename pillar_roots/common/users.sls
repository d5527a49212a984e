# Login accounts and their SSH public keys.
#
# The admin group is `wheel` on the RedHat family and `sudo` elsewhere.
# Pillar templates see grains, not other pillar data: that is why this file
# works the group out from a grain instead of reading it from common/os.sls.
{% from 'defaults.jinja' import user %}
{% set admin_group = 'wheel' if grains['os_family'] == 'RedHat' else 'sudo' %}
users:
  alice: {{ user(2001, 'Alice Lindqvist', ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHf3mXQ2alicedemokey0000000000000000000001 alice@laptop'], [admin_group]) }}
  bob: {{ user(2002, 'Bob Okafor', ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKb8dQ7bobdemokey00000000000000000000000002 bob@workstation', 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYbobdemokey03 bob@phone'], [admin_group]) }}
{%- if grains['role'] == 'db' %}
  # database hosts also get the DBA, without admin rights
  carol: {{ user(2003, 'Carol Nguyen', ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPq4carolldemokey000000000000000000000000004 carol@dba'], ['postgres'], '/bin/zsh') }}
{%- endif %}

# accounts that must not exist anywhere
absent_users:
  - olddeploy
