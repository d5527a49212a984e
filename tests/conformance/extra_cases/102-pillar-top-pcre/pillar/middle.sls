middle: true
