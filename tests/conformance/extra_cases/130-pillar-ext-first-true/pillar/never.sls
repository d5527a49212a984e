never: true
