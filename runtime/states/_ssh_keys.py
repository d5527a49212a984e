"""OpenSSH key lines as Salt's ``ssh`` module reads and writes them (authorized_keys, key files).

A line is ``[options ]enc key [comment]``; keys are identified by their base64 body.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import pwd
import re
from dataclasses import dataclass, field

LINE = re.compile(r"^(.*?)\s?((?:sk-)?(?:ssh\-|ecds)[\w@.-]+\s.+)$")

_RSA = ("r", "rsa", "ssh-rsa")
_DSS = ("d", "dsa", "dss", "ssh-dss")
_ECDSA = ("e", "ecdsa", "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp256")
_ED25519 = ("ed25519", "ssh-ed25519")
_ALSO = (
    "rsa-sha2-512", "rsa-sha2-256", "rsa-sha2-512-cert-v01@openssh.com", "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ssh-ed25519-cert-v01@openssh.com", "sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519-cert-v01@openssh.com",
)


class KeyError_(ValueError):
    """A key, key type or key file Salt would refuse."""


def refine_enc(enc: str) -> str:
    """Salt's short names for key types (``rsa`` -> ``ssh-rsa`` ...)."""
    if enc in _RSA:
        return "ssh-rsa"
    if enc in _DSS:
        return "ssh-dss"
    if enc in _ECDSA:
        return "ecdsa-sha2-nistp256" if enc in ("e", "ecdsa") else enc
    if enc in _ED25519:
        return "ssh-ed25519"
    if enc in _ALSO:
        return enc
    raise KeyError_(f"Incorrect encryption key type '{enc}'.")


def fingerprint(key: str, hash_type: str | None = None) -> str | None:
    """Colon-separated hex digest of the decoded key (None when it is not base64)."""
    func = getattr(hashlib, (hash_type or "sha256").lower(), None)
    if func is None:
        raise KeyError_(f"The fingerprint_hash_type {hash_type} is not supported.")
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        return None
    digest = func(raw).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


@dataclass(frozen=True)
class KeyLine:
    enc: str
    key: str
    comment: str = ""
    options: tuple[str, ...] = field(default_factory=tuple)

    def line(self) -> str:
        prefix = f"{','.join(self.options)} " if self.options else ""
        return f"{prefix}{self.enc} {self.key} {self.comment}\n"


def parse_line(text: str) -> KeyLine | None:
    text = text.strip()
    if not text or text.startswith("#"):
        return None
    found = LINE.search(text)
    if not found:
        return None
    comps = found.group(2).split()
    if len(comps) < 2:
        return None
    options = tuple(found.group(1).split(",")) if found.group(1) else ()
    return KeyLine(comps[0], comps[1], " ".join(comps[2:]), options)


def parse_keys(text: str, hash_type: str | None = None) -> dict[str, KeyLine]:
    """Valid keys of a file, by key body (Salt's _validate_keys)."""
    out: dict[str, KeyLine] = {}
    for raw in text.splitlines():
        parsed = parse_line(raw)
        if parsed is not None and fingerprint(parsed.key, hash_type) is not None:
            out[parsed.key] = parsed
    return out


def split_name(name: str, enc: str, comment: str, options: list[str] | None) -> tuple[str, str, str, list[str]]:
    """A state's ``name`` may be a whole key line: (key, enc, comment, options) from it."""
    found = LINE.search(name)
    if not found:
        parts = name.split(None, 1)
        return parts[0], enc, parts[1] if len(parts) == 2 else comment, list(options or [])
    if found.group(1):
        options = found.group(1).split(",")
    comps = found.group(2).split(None, 2)
    return comps[1], comps[0], comps[2] if len(comps) == 3 else comment, list(options or [])


def user_info(user: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(user)
    except KeyError:
        return None


def config_path(user: str, config: str) -> str:
    """The key file of ``user``: ``%h``/``%u``/``%%`` expanded, relative paths under the home."""
    info = user_info(user)
    if info is None:
        raise KeyError_(f"User '{user}' does not exist")
    expanded = re.sub(r"%[%hu]", lambda m: {"%%": "%", "%h": info.pw_dir, "%u": user}[m.group(0)], config)
    return expanded if os.path.isabs(expanded) else os.path.join(info.pw_dir, expanded)


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
