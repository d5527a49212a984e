by_compound: true
