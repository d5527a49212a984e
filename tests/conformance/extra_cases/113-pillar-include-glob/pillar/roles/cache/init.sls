roles_seen:
  cache: 1
