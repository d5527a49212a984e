"""ext_pillar drivers: one module per driver, each exposing Salt's
``ext_pillar(minion_id, pillar, *args, **kwargs) -> dict``.

Custom drivers may raise :class:`DriverError` for a failure whose message is
shown to users as is (any other exception is shown with its type name).
"""

from ext_pillar._errors import DriverError

__all__ = ["DriverError"]
