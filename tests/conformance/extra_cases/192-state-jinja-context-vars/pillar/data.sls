app:
  settings:
    port: 8080
