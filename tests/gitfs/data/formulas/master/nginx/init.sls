nginx_formula:
  test.nop:
    - name: "nginx formula as {{ sls }} from {{ saltenv }}"
    - require:
      - pkg: web_package
