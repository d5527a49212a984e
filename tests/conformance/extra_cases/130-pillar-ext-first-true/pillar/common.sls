collide: sls
shared:
  who: sls
  sls: 1
seen_role: {{ pillar['role'] }}
seen_dc: {{ salt['pillar.get']('dc', 'none') }}
