config_file:
  test.succeed_with_changes:
    - name: /etc/app/app.conf
    - level: 1

service_state:
  test.succeed_without_changes:
    - name: app-service
