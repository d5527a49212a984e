site:
  name: {{ grains['id'] }}.example.com
  branch: master
