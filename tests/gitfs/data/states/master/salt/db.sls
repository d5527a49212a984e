db_service:
  service.running:
    - name: postgresql
    - enable: True
