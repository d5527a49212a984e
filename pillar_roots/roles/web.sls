# nginx for the web hosts.  Each site becomes a file in sites-available with
# a symlink in sites-enabled (see state_roots/nginx).
nginx:
  # one worker per CPU, as nginx's `worker_processes auto` would pick
  worker_processes: {{ grains['num_cpus'] }}
  worker_connections: 1024
  client_max_body_size: 16m
  sites:
    shop:
      server_name: shop.example.net
      listen: 8080
      root: /srv/www/shop
      upstream: 127.0.0.1:9000
    status:
      server_name: {{ grains['fqdn'] }}
      listen: 8081
      root: /srv/www/status
      allow: [127.0.0.1, 10.0.0.0/8]
