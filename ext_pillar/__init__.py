"""ext_pillar drivers: one module per driver, each exposing Salt's
``ext_pillar(minion_id, pillar, *args, **kwargs) -> dict``."""
