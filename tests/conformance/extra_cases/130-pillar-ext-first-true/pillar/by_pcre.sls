by_pcre: true
