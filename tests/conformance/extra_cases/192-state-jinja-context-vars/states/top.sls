base:
  '*':
    - apps.web
    - apps.web.conf
