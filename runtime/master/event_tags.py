"""Which tags a minion may fire on the master's bus (``_minion_event``; SECURITY.md class 3).

The master's own events live under ``salt/`` (``salt/job/<jid>/new`` and ``…/ret/<id>``,
``salt/auth``, ``salt/key``, ``salt/presence/…``, ``salt/run/…``, ``salt/wheel/…``) and, as
Salt's legacy return event, under a bare job id; reactors and clients act on them.  A minion may
fire its own ``salt/minion/<its id>/…`` and ``salt/beacon/<its id>/…`` events, Salt's legacy
``minion_start``, and any tag of its own outside ``salt/``.

A tag is checked in a normalised form (its *skeleton*), so that no way of writing a reserved tag
gets through: compatibility forms folded (NFKC: full-width letters, ligatures), case folded,
accents dropped, invisible characters (zero-width, bidi marks, soft hyphens) and blanks removed,
backslashes read as slashes, doubled, leading and trailing slashes collapsed, digits of any script
read as digits, and every other character outside ASCII read as *any* character (a Cyrillic
``ѕ`` or a division slash ``∕`` may stand for ``s`` or ``/``: a tag that could be read as a
reserved one is reserved).  Only the literal forms ``salt/minion/<id>/…`` and
``salt/beacon/<id>/…`` of the sender's own id, without ``.`` or ``..`` segments, are let through
inside ``salt/`` (empty segments are: Salt's inotify beacon appends a path, ``…/inotify//etc``).
"""

from __future__ import annotations

import re
import unicodedata

MAX_TAG_LENGTH = 512
ANY = "\x00"           # in a skeleton: a character outside ASCII, which may stand for any other


def skeleton(tag: str) -> str:
    """The form a tag is checked in (see the module docstring)."""
    text = unicodedata.normalize("NFKC", tag).casefold()
    out = []
    for char in unicodedata.normalize("NFKD", text):
        category = unicodedata.category(char)
        if category in ("Mn", "Me", "Cf") or char.isspace():
            continue                          # accents, invisible characters, blanks
        if char == "\\":
            char = "/"
        elif not char.isascii():
            digit = unicodedata.decimal(char, None)
            char = str(digit) if digit is not None else ANY
        out.append(char)
    return re.sub(r"/{2,}", "/", "".join(out)).strip("/")


def _pattern(word: str) -> str:
    return "".join(f"[{re.escape(c)}{ANY}]" for c in word)


# "salt" as the first segment, however written; a 20-digit job id (Salt's legacy return tag)
_SALT = re.compile("^" + _pattern("salt") + f"(?:[/{ANY}]|$)")
_JOB_ID = re.compile(r"^[0-9]{20}(?:/|$)")


def tag_refusal(tag: str, minion_id: str) -> str | None:
    """None when ``minion_id`` may fire ``tag``, else the refusal's token: ``invalid_tag`` (empty,
    over 512 characters, control characters) or ``reserved_tag``."""
    if not tag or len(tag) > MAX_TAG_LENGTH or any(unicodedata.category(c) == "Cc" for c in tag):
        return "invalid_tag"
    for own in (f"salt/minion/{minion_id}", f"salt/beacon/{minion_id}"):
        if (tag == own or tag.startswith(own + "/")) and not {".", ".."} & set(tag.split("/")):
            return None
    shape = skeleton(tag)
    if _SALT.match(shape) or _JOB_ID.match(shape):
        return "reserved_tag"
    return None
