"""Salt's Jinja filters that read the host rendering the template (which, file_hashsum, is_empty,
is_text_file, is_bin_file, list_files, get_uid) and the network (dns_check, http_query).

They go through the render's ``salt`` table (cmd.which, file.get_hash, file.stats, file.read ...), so
they run for real on a minion and answer as on a host without the thing in an offline compile, like
the execution functions they use (and compile --strict reports them).  saltpan does not query DNS or
HTTP from templates: dns_check and http_query are errors saying so.
"""

from __future__ import annotations

from typing import Any

import jinja2


class HostFilterError(jinja2.TemplateRuntimeError):
    pass


def _salt(ctx: jinja2.runtime.Context, name: str) -> Any:
    table = ctx.get("salt")
    if table is None or name not in table:
        raise HostFilterError(f"this filter needs the salt function {name}, which is not available here")
    return table[name]


def _is_binary(data: bytes) -> bool:
    """salt.utils.stringutils.is_binary."""
    if not data:
        return False
    if b"\0" in data:
        return True
    text_characters = bytes(range(32, 127)) + b"\n\r\t\f\b"
    try:
        data.decode("utf-8")
        return False
    except UnicodeDecodeError:
        pass
    nontext = data.translate(None, text_characters)
    return len(nontext) / len(data) > 0.30


@jinja2.pass_context
def which(ctx: jinja2.runtime.Context, exe: Any = None) -> Any:
    if not exe:
        return None
    return _salt(ctx, "cmd.which")(exe)


@jinja2.pass_context
def file_hashsum(ctx: jinja2.runtime.Context, path: str, form: str = "sha256", chunk_size: int = 65536) -> str:
    digest: str = _salt(ctx, "file.get_hash")(path, form, chunk_size)
    return digest


def _stats(ctx: jinja2.runtime.Context, path: str) -> dict[str, Any] | None:
    try:
        stats: dict[str, Any] | None = _salt(ctx, "file.stats")(path)
        return stats
    except HostFilterError:
        raise
    except Exception:  # noqa: BLE001 - a path that does not exist
        return None


@jinja2.pass_context
def is_empty(ctx: jinja2.runtime.Context, filename: str) -> bool:
    found = _stats(ctx, filename)
    if not found:
        return False
    return found.get("size") == 0


def _head(ctx: jinja2.runtime.Context, path: str, size: int) -> bytes | None:
    try:
        data = _salt(ctx, "file.read")(path, binary=True)
    except HostFilterError:
        raise
    except Exception:  # noqa: BLE001 - a path that does not exist or cannot be read
        return None
    return data[:size] if isinstance(data, bytes) else str(data).encode()[:size]


@jinja2.pass_context
def is_text_file(ctx: jinja2.runtime.Context, path: str, blocksize: int = 512) -> bool:
    block = _head(ctx, path, blocksize)
    return block is not None and not _is_binary(block)


@jinja2.pass_context
def is_bin_file(ctx: jinja2.runtime.Context, path: str) -> bool:
    found = _stats(ctx, path)
    if not found or found.get("type") != "file":
        return False
    block = _head(ctx, path, 2048)
    return block is not None and _is_binary(block)


@jinja2.pass_context
def list_files(ctx: jinja2.runtime.Context, directory: str) -> list[str]:
    import posixpath

    out = {directory}
    pending = [directory]
    readdir = _salt(ctx, "file.readdir")
    is_dir = _salt(ctx, "file.directory_exists")
    while pending:
        current = pending.pop()
        try:
            entries = readdir(current)
        except Exception:  # noqa: BLE001 - not a directory (or absent): nothing below it
            continue
        for name in entries:
            if name in (".", ".."):
                continue
            full = posixpath.join(current, name)
            out.add(full)
            if is_dir(full):
                pending.append(full)
    return list(out)


@jinja2.pass_context
def get_uid(ctx: jinja2.runtime.Context, user: str | None = None) -> Any:
    if user is None:
        return None  # the uid of the process rendering: saltpan does not expose it to templates
    info = _salt(ctx, "user.info")(user)
    return info.get("uid") if info else None


def dns_check(addr: Any, port: Any, safe: bool = False, ipv6: Any = None) -> Any:
    raise HostFilterError("dns_check: saltpan does not resolve names from templates; put the address in pillar")


def http_query(url: Any, *args: Any, **kwargs: Any) -> Any:
    raise HostFilterError("http_query: saltpan does not make HTTP requests from templates; use an ext_pillar "
                          "(docs/ext_pillar.md) to bring remote data into pillar")


FILTERS: dict[str, Any] = {
    "which": which,
    "file_hashsum": file_hashsum,
    "is_empty": is_empty,
    "is_text_file": is_text_file,
    "is_bin_file": is_bin_file,
    "list_files": list_files,
    "get_uid": get_uid,
    "dns_check": dns_check,
    "http_query": http_query,
}
