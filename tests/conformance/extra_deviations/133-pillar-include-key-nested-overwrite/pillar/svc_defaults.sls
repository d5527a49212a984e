port: 80
workers: 4
listen: 0.0.0.0
