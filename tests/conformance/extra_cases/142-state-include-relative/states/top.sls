base:
  '*':
    - app.web
    - app.web.extra
