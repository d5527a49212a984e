by_pillar: true
