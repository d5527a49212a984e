app:
  port: 80
  port: 81
