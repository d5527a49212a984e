same_module_twice:
  file.managed:
    - name: {{ grains['sandbox'] }}/x
  file.directory:
    - name: {{ grains['sandbox'] }}/y

plain_string: justaword

short_form: test.nop
