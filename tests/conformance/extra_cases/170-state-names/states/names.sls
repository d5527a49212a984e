many_files:
  file.managed:
    - contents: shared
    - mode: '0644'
    - names:
      - {{ grains['sandbox'] }}/one.txt
      - {{ grains['sandbox'] }}/two.txt:
        - contents: special
        - mode: '0600'
      - {{ grains['sandbox'] }}/three.txt

plain_tests:
  test.succeed_with_changes:
    - names:
      - zeta
      - alpha
      - mid

after_all:
  test.nop:
    - require:
      - file: many_files
      - test: alpha
