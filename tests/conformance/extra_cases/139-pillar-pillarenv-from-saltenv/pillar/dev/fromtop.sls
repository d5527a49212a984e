fromtop: 1
