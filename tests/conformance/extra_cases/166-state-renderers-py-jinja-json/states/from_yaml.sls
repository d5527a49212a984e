#!yaml
yaml_state:
  test.succeed_without_changes:
    - name: "{{ not rendered }}"
