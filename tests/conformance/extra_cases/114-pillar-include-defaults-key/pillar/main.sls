include:
  - svc:
      defaults:
        port: 8080
        label: web
      key: services:web
  - plain
  - nested:
      key: deep
main: 1
services:
  web:
    owner: main
