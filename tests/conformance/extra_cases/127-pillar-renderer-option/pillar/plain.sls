plain:
  braces: "{{ grains['os'] }}"
  number: 10
