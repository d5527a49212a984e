fine: true
