compound_nomatch: 1
