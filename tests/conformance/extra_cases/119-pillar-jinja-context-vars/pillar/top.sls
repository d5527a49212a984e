base:
  '*':
    - apps.web.conf
    - apps.db
