app_file:
  file.managed:
    - name: {{ grains['sandbox'] }}/app.txt
    - contents: {{ pillar.get('good', 0) }}
