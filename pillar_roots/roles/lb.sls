# HAProxy for the load balancers: public HTTPS in front of the web hosts.
haproxy:
  maxconn: 4096
  stats:
    port: 8404
    user: admin
    password: demo-only-Kd9sM3fQ
  frontends:
    https:
      bind: '*:443'
      default_backend: shop
  backends:
    shop:
      balance: roundrobin
      check: /healthz
      servers:
        web01: 10.10.1.11:8080
        web02: 10.20.1.12:8080
