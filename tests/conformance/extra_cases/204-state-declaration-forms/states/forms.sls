dotted:
  test.succeed_without_changes:
    - name: dotted-name

split_first:
  test:
    - succeed_with_changes
    - name: split-first

split_last:
  test:
    - name: split-last
    - nop

one_line: test.nop

two_modules:
  test.nop: []
  cmd.run:
    - name: 'true'
