base:
  '*':
    - apps
    - apps.web
