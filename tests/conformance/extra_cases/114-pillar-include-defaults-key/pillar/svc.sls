port: {{ port }}
label: {{ label | upper }}
owner: svc
