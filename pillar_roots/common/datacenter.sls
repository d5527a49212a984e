# Per-datacenter data: resolvers, time servers and log shipping for the
# datacenter named by the `datacenter` grain.
{% import_yaml 'common/datacenters.yaml' as datacenters %}
{% set dc = datacenters[grains['datacenter']] %}
datacenter:
  name: {{ grains['datacenter'] }}
  location: {{ dc.location }}
  network: {{ dc.network }}

network:
  search: {{ grains['datacenter'] }}.example.net
  nameservers: {{ dc.nameservers | json }}

ntp:
  servers: {{ dc.ntp_servers | json }}

syslog:
  remote: {{ dc.syslog }}
