shared:
  from: extpillar repo (root pillar)
