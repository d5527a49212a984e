app:
  port: 80
