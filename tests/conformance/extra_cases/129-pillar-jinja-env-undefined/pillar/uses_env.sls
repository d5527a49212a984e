which_env: {{ env }}
