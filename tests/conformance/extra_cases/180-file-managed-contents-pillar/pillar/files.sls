files:
  app_conf: |
    listen 80
    workers 4
  key: secret-key
