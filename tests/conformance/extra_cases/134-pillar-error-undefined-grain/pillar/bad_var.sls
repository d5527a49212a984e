bad_var: {{ undefined_thing }}
