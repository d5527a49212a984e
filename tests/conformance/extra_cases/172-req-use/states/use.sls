template_file:
  file.managed:
    - name: {{ grains['sandbox'] }}/template.txt
    - contents: from template
    - mode: '0640'
    - require:
      - test: first

first:
  test.nop: []

user_file:
  file.managed:
    - name: {{ grains['sandbox'] }}/user.txt
    - mode: '0600'
    - use:
      - file: template_file

defaults_giver:
  file.managed:
    - name: {{ grains['sandbox'] }}/giver.txt
    - contents: given
    - mode: '0604'
    - use_in:
      - file: receiver

receiver:
  file.managed:
    - name: {{ grains['sandbox'] }}/receiver.txt
    - contents: own contents
