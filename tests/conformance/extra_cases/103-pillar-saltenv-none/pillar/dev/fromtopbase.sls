fromtopbase: 1
