# Pillar top file: which pillar files each minion gets.
#
# A target on the left, a list of pillar sls names on the right ("roles.web"
# is roles/web.sls, "common" is common/init.sls).  The targets show the
# matchers a Salt tree typically uses:
#
#   glob       'web*'                                  minion ids starting with "web"
#   grain      'role:db'           (match: grain)      the grain `role` is db
#   compound   'G@role:lb or lb*'  (match: compound)   grains, globs, and/or/not combined
#   nodegroup  'frontends'         (match: nodegroup)  a named compound target from the
#                                                      config: G@role:web or G@role:lb
#
# A minion gets every file whose target matches it; later files win when two
# files set the same key.
base:
  # users, per-OS and per-datacenter data for everyone
  '*':
    - common

  'web*':
    - roles.web

  'role:db':
    - match: grain
    - roles.db

  # only the database hosts that stream from a primary
  'G@role:db and G@postgres_role:replica':
    - match: compound
    - roles.db_replica

  'G@role:lb or lb*':
    - match: compound
    - roles.lb

  'role:cache':
    - match: grain
    - roles.cache

  'mon*':
    - monitoring.server

  # every host except the monitoring server itself runs the metrics agent
  '* and not G@role:monitoring':
    - match: compound
    - monitoring.agent

  # hosts that terminate public HTTPS traffic
  'frontends':
    - match: nodegroup
    - frontends
