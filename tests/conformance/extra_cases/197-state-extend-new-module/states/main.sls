include:
  - base
  - optional
exclude:
  - sls: optional
  - id: dropped
extend:
  svc:
    cmd.run:
      - name: 'true'
  pkg:
    test.succeed_with_changes:
      - extra: 1
  dropped:
    test.nop:
      - ignored: true
main:
  test.nop: []
