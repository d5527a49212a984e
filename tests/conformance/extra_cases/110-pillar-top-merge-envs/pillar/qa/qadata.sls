qadata: 1
who: qa
