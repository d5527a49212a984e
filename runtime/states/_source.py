"""Where managed file content comes from: ``source`` URLs, ``source_hash`` and templates.

Sources: ``salt://path[?saltenv=env]`` (through ``StateContext.fetch_file``), local paths
(``/abs/path``, ``file:///abs/path``) and ``http(s)://``/``ftp://`` (which need a
``source_hash`` unless ``skip_verify``). A list of sources means "the first that exists";
list items may be ``{url: hash}`` mappings, as in Salt.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.states import StateContext

REMOTE_SCHEMES = ("http", "https", "ftp")
HASH_LENGTHS = {32: "md5", 40: "sha1", 56: "sha224", 64: "sha256", 96: "sha384", 128: "sha512"}
_HEX = re.compile(r"\b([0-9a-fA-F]{32,128})\b")
_FETCH_TIMEOUT = 60


class SourceError(Exception):
    """The source could not be read, verified or rendered; the message is the state comment."""


@dataclass
class Fetched:
    url: str
    data: bytes
    mode: str | None  # the source's permission bits ("0644"), when known


def _scheme(url: str) -> str:
    return urllib.parse.urlparse(url).scheme


def _split_saltenv(url: str, default: str) -> tuple[str, str]:
    # Split by hand: urlparse().geturl() turns salt:///etc/x into salt:/etc/x, hiding the absolute path.
    plain, _, query = url.partition("?")
    env = urllib.parse.parse_qs(query).get("saltenv", [default])[0]
    return plain, env


def fetch(ctx: StateContext, url: str) -> Fetched | None:
    """Bytes of one source, or None when it does not exist."""
    scheme = _scheme(url)
    if scheme == "salt":
        if ctx.fetch_file is None:
            raise SourceError(f"Cannot fetch {url}: no file server is configured for this run")
        plain, env = _split_saltenv(url, ctx.saltenv)
        got = ctx.fetch_file(plain, env)
        if got is None:
            return None
        data, _display, mode = got
        if isinstance(data, str):
            data = data.encode()
        return Fetched(url, data, None if mode is None else oct(mode & 0o7777)[2:].zfill(4))
    if scheme in ("", "file"):
        path = urllib.parse.urlparse(url).path if scheme == "file" else url
        if not os.path.isabs(path):
            raise SourceError(f"Source '{url}' is not an absolute path or a supported URL")
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise SourceError(f"Source '{url}' is a directory") from None
        except OSError as exc:
            raise SourceError(f"Unable to read source '{url}': {exc.strerror}") from exc
        return Fetched(url, data, oct(mode)[2:].zfill(4))
    if scheme in REMOTE_SCHEMES:
        return _fetch_remote(url)
    raise SourceError(f"Unsupported source URL scheme '{scheme}' in '{url}'")


def _fetch_remote(url: str) -> Fetched | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as response:  # noqa: S310 - user-given URL
            return Fetched(url, response.read(), None)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise SourceError(f"Unable to fetch {url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise SourceError(f"Unable to fetch {url}: {exc}") from exc


def source_entries(source: Any, source_hash: Any) -> list[tuple[str, Any]]:
    """Normalise ``source`` (string, list of strings / {url: hash}) to (url, hash) pairs."""
    if isinstance(source, str):
        return [(source, source_hash)]
    if isinstance(source, Mapping):
        return [(str(k), v) for k, v in source.items()]
    if isinstance(source, list):
        out: list[tuple[str, Any]] = []
        for item in source:
            if isinstance(item, Mapping):
                out.extend((str(k), v) for k, v in item.items())
            else:
                out.append((str(item), source_hash))
        return out
    raise SourceError(f"Invalid source {source!r}: use a URL or a list of URLs")


def first_source(ctx: StateContext, source: Any, source_hash: Any) -> tuple[Fetched, Any]:
    """The first existing source and the hash that goes with it."""
    entries = source_entries(source, source_hash)
    for url, hash_value in entries:
        got = fetch(ctx, url)
        if got is not None:
            return got, hash_value
    if len(entries) == 1:
        raise SourceError(f"Source file {entries[0][0]} not found in saltenv '{ctx.saltenv}'")
    raise SourceError("none of the specified sources were found: " + ", ".join(u for u, _ in entries))


# ---------------------------------------------------------------------------
# source_hash


def _parse_hash_text(text: str, source_url: str, source_hash_name: str | None) -> tuple[str, str]:
    text = text.strip()
    if "=" in text and "\n" not in text:
        kind, _, value = text.partition("=")
        kind = kind.strip().lower()
        if kind in hashlib.algorithms_available:
            return kind, value.strip().lower()
    wanted = source_hash_name or os.path.basename(source_url.split("?", 1)[0].rstrip("/"))
    candidates: list[str] = []
    for line in text.splitlines():
        found = [h for h in _HEX.findall(line) if len(h) in HASH_LENGTHS]
        if not found:
            continue
        names = {token.lstrip("*").strip("()") for token in line.split()}
        if wanted and (wanted in names or any(os.path.basename(n) == wanted for n in names)):
            return HASH_LENGTHS[len(found[0])], found[0].lower()
        candidates.extend(found)
    if len(candidates) == 1:
        return HASH_LENGTHS[len(candidates[0])], candidates[0].lower()
    if not candidates:
        raise SourceError(f"source_hash '{text[:80]}' holds no checksum")
    raise SourceError(f"source_hash holds several checksums and none names '{wanted}': set source_hash_name")


def expected_hash(ctx: StateContext, source_hash: Any, source_url: str,
                  source_hash_name: str | None = None) -> tuple[str, str] | None:
    """(hash_type, hex) from a ``source_hash`` value (``type=hex``, bare hex, or a hash file URL)."""
    if source_hash in (None, "", {}):
        return None
    if isinstance(source_hash, Mapping):  # Salt's {hash_type: ..., hsum: ...}
        return str(source_hash.get("hash_type", "sha256")).lower(), str(source_hash.get("hsum", "")).lower()
    text = str(source_hash).strip()
    bare = text.lower()
    if re.fullmatch(r"[0-9a-f]+", bare):
        if len(bare) not in HASH_LENGTHS:
            raise SourceError(f"source_hash '{text}' has an unknown length for a checksum")
        return HASH_LENGTHS[len(bare)], bare
    scheme = _scheme(text)
    if scheme in ("salt", "file", *REMOTE_SCHEMES) or text.startswith("/"):
        got = fetch(ctx, text)
        if got is None:
            raise SourceError(f"Source hash file {text} not found")
        return _parse_hash_text(got.data.decode("utf-8", errors="replace"), source_url, source_hash_name)
    return _parse_hash_text(text, source_url, source_hash_name)


def verify(data: bytes, url: str, wanted: tuple[str, str]) -> None:
    kind, value = wanted
    try:
        actual = hashlib.new(kind, data).hexdigest()
    except ValueError:
        raise SourceError(f"Unknown hash type '{kind}' in source_hash") from None
    if actual != value:
        raise SourceError(
            f"Specified {kind} checksum for {url} ({value}) does not match actual checksum ({actual})"
        )


def hash_of(data: bytes, kind: str) -> str:
    return hashlib.new(kind, data).hexdigest()


# ---------------------------------------------------------------------------
# templates


def render(ctx: StateContext, text: str, engine: Any, context: Mapping[str, Any] | None,
           defaults: Mapping[str, Any] | None, display: str, base: Mapping[str, Any] | None = None) -> str:
    """Render ``text`` with ``engine``: ``base`` (what the state passes, e.g. file.managed's
    ``source``/``name``/``user``...) overlaid by ``defaults``, overlaid by ``context`` (Salt's order)."""
    if context is not None and not isinstance(context, Mapping):
        raise SourceError("Context must be formed as a dict")
    if defaults and not isinstance(defaults, Mapping):
        raise SourceError("Defaults must be formed as a dict")
    if ctx.render_template is None:
        raise SourceError(f"Cannot render {display}: no template renderer is configured for this run")
    variables: dict[str, Any] = dict(base or {})
    variables.update(defaults or {})
    variables.update(context or {})
    try:
        out = ctx.render_template(text, str(engine).lower(), variables, display)
    except Exception as exc:  # noqa: BLE001 - any renderer failure is this state's failure
        raise SourceError(f"Unable to render {display}: {exc}") from exc
    if not isinstance(out, str):
        raise SourceError(f"Template {display} did not render to text")
    return out
