roles_seen:
  db: 1
who: db
