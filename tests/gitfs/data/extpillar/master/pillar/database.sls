database:
  port: 5432
  replicas: {{ grains.get('replicas', 1) }}
