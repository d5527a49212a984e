# A streaming replica: everything a database host gets, plus where to
# replicate from.  The plain include pulls in roles.db so this file works on
# its own; a minion that also gets roles.db from the top file still renders
# it only once.
include:
  - roles.db

postgres:
  hot_standby: true
  replication:
    primary_host: db01.ams1.example.net
    primary_port: 5432
    slot: {{ grains['id'] }}
