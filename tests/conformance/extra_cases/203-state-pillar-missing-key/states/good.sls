good:
  test.nop:
    - port: {{ salt['pillar.get']('app:port') }}
    - other: {{ pillar.get('nope', 'dflt') }}
