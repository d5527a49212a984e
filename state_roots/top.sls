# State top file: which states each minion gets.  It targets the same way
# as pillar_roots/top.sls (glob, grain, compound, nodegroup).
#
# Every state in this tree writes under the `sandbox` grain (see map.jinja),
# so `state.apply` needs no root and never touches the real system; the
# optional extras/ files show pkg, service and user states and are not
# listed here.
base:
  '*':
    - common

  'web*':
    - nginx

  'role:db':
    - match: grain
    - postgres

  'G@role:lb or lb*':
    - match: compound
    - haproxy

  'role:cache':
    - match: grain
    - redis

  'mon*':
    - monitoring.server

  '* and not G@role:monitoring':
    - match: compound
    - monitoring.agent

  'frontends':
    - match: nodegroup
    - tls
