lookup:
  port: 8443
only_in_pillar: from-pillar
