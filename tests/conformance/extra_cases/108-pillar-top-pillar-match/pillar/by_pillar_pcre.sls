by_pillar_pcre: true
