role: web
common: true
