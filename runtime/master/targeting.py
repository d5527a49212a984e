"""Which accepted minions a target expression reaches (the master's expected-minion list).

The same matchers as the compiler and the minions (compiler.match).  Grain and
pillar expressions are matched against the minion data cache; a minion with no
cached data yet is included (it decides for itself when the job arrives), as
Salt's greedy matching does.  Glob, pcre and list targets are decided by the id
alone and never look at the data; grain targets never look at the pillars (pass
lazy mappings, ``DataCache.view``, and what is not needed is not read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler import match

TGT_TYPES = ("glob", "pcre", "list", "grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact", "ipcidr",
             "compound", "nodegroup")
_NEEDS_DATA = {"grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact", "ipcidr", "compound", "nodegroup"}
_NEEDS_PILLAR = {"pillar", "pillar_pcre", "pillar_exact", "compound", "nodegroup"}


def expected_minions(tgt: Any, tgt_type: str, accepted: Iterable[str], grains: Mapping[str, Any],
                     pillars: Mapping[str, Any], nodegroups: Mapping[str, Any] | None = None) -> list[str]:
    """Accepted minions matching the target. Raises match.MatchError on a malformed expression."""
    if tgt_type not in TGT_TYPES:
        raise match.MatchError(f"unknown target type {tgt_type!r} (known: {', '.join(TGT_TYPES)})")
    groups = nodegroups or {}
    out = []
    needs_data, needs_pillar = tgt_type in _NEEDS_DATA, tgt_type in _NEEDS_PILLAR
    for minion_id in sorted(set(accepted)):
        minion_grains = grains.get(minion_id) if needs_data else None
        minion_pillar = pillars.get(minion_id) if needs_pillar else None
        if needs_data and minion_grains is None:
            if tgt_type in ("compound", "nodegroup") and _id_only_miss(tgt, tgt_type, minion_id, groups):
                continue
            out.append(minion_id)
            continue
        minion = match.Minion(minion_id, minion_grains or {}, minion_pillar or {})
        if match.match_one(tgt_type, tgt, minion, groups):
            out.append(minion_id)
    return out


def _id_only_miss(tgt: Any, tgt_type: str, minion_id: str, groups: Mapping[str, Any]) -> bool:
    """For a minion without data: does the expression fail on its id alone, whatever its data?

    Evaluate twice, once with every data engine answering True and once False; if both say
    no, the minion is certainly not targeted.
    """
    try:
        yes = match.match_one(tgt_type, tgt, match.Minion(minion_id, assume_data=True), groups)
        no = match.match_one(tgt_type, tgt, match.Minion(minion_id, assume_data=False), groups)
    except match.MatchError:
        return False
    return not yes and not no
