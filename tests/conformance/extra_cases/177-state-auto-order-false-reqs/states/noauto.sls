zz_first_declared:
  test.nop: []

aa_requires_zz:
  test.nop:
    - require:
      - test: zz_first_declared

mm_cmd:
  cmd.run:
    - name: 'true'

bb_plain:
  test.nop: []

ordered_two:
  test.nop:
    - order: 2

yy_watch_in:
  test.nop:
    - watch_in:
      - test: bb_plain
