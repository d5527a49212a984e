which_saltenv: {{ saltenv }}
