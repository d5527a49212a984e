roles_seen:
  web: 1
who: web
