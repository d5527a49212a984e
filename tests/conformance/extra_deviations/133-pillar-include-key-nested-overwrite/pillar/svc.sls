include:
  - svc_defaults
port: 8080
