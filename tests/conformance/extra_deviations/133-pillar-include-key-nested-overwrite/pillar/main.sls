include:
  - svc:
      key: services
main: 1
