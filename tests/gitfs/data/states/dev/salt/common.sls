{% set who = pillar.get('who', 'nobody') %}
motd:
  file.managed:
    - name: /etc/motd
    - source: salt://files/motd
    - template: jinja
    - context:
        who: {{ who }}

pillar_seen:
  test.succeed_without_changes:
    - name: "pillar who={{ who }} release={{ pillar.get('release', 'none') }}"
