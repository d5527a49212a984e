"""Shared by http_json and http_yaml: GET a per-minion URL with a time limit and TLS checks."""

from __future__ import annotations

import base64
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from compiler import match
from ext_pillar import _deadline
from ext_pillar._errors import DriverError

_GRAIN = re.compile(r"<(?P<name>.*?)>")
_MAX_BODY = 64 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0


def build_url(url: Any, minion_id: str, with_grains: bool, grains: Mapping[str, Any]) -> str:
    """``%s`` -> the minion id, and with ``with_grains`` each ``<grain>`` -> its value (URL-quoted)."""
    if not isinstance(url, str) or not url:
        raise DriverError(f"url must be a string, got {url!r}")
    url = url.replace("%s", urllib.parse.quote(minion_id, safe=""))
    if with_grains:
        for name in dict.fromkeys(m.group("name") for m in _GRAIN.finditer(url)):
            value = match.traverse(grains, name, None)
            if value is None or value == "" or isinstance(value, (dict, list)):
                raise DriverError(f"the url needs grain {name!r}, which minion {minion_id} "
                                  f"{'does not have' if value in (None, '') else 'has as a ' + type(value).__name__}")
            url = url.replace(f"<{name}>", urllib.parse.quote(str(value), safe=""))
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise DriverError(f"url must be http:// or https://, got {_shown(url)!r}")
    return url


def _shown(url: str) -> str:
    """The URL without any user:password part, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _tls_context(verify_ssl: bool, ca_bundle: str | None) -> ssl.SSLContext:
    if not isinstance(verify_ssl, bool):
        raise DriverError(f"verify_ssl must be true or false, got {verify_ssl!r}")
    if not verify_ssl:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=ca_bundle)
    except (OSError, ssl.SSLError) as exc:
        raise DriverError(f"cannot read ca_bundle {ca_bundle}: {getattr(exc, 'strerror', None) or exc}") from None


def _auth_header(username: str | None, password: str | None, auth: Any) -> str | None:
    if auth is not None:
        if not (isinstance(auth, (list, tuple)) and len(auth) == 2):
            raise DriverError("auth must be a [username, password] pair")
        username, password = auth
    if username is None:
        return None
    token = base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")
    return f"Basic {token}"


def get(url: str, *, timeout: float | None = None, verify_ssl: bool = True, ca_bundle: str | None = None,
        header_dict: Mapping[str, Any] | None = None, username: str | None = None, password: str | None = None,
        auth: Any = None) -> str:
    """GET url; the body as text, or a DriverError naming the URL and what went wrong."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise DriverError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if header_dict is not None and not isinstance(header_dict, Mapping):
        raise DriverError(f"header_dict must be a mapping of header: value, got {header_dict!r}")
    limit = _deadline.bounded(timeout, DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT
    named = _deadline.nominal(timeout, DEFAULT_TIMEOUT) or limit
    shown = _shown(url)
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None and username is None and auth is None:
        # user:password@host in the URL: sent as basic auth, never shown
        username = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
    url = shown
    headers = {str(k): str(v) for k, v in (header_dict or {}).items()}
    basic = _auth_header(username, password, auth)
    if basic:
        headers["Authorization"] = basic
    request = urllib.request.Request(url, headers=headers, method="GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=_tls_context(verify_ssl, ca_bundle)))
    started = time.monotonic()
    try:
        with opener.open(request, timeout=limit) as response:
            charset = response.headers.get_content_charset() or "utf-8"
            body = _read_all(response, started, limit, shown, named)
    except urllib.error.HTTPError as exc:
        raise DriverError(f"GET {shown} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise DriverError(f"GET {shown} failed: {_reason(exc.reason, named)}") from None
    except TimeoutError:
        raise DriverError(f"GET {shown} failed: no answer within {named:.3g} s") from None
    except (ConnectionError, ssl.SSLError, OSError) as exc:
        raise DriverError(f"GET {shown} failed: {_reason(exc, named)}") from None
    try:
        return body.decode(charset)
    except (LookupError, UnicodeDecodeError) as exc:
        raise DriverError(f"GET {shown}: the body is not valid {charset} text ({exc})") from None


def _read_all(response: Any, started: float, limit: float, shown: str, named: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() - started > limit:
            raise DriverError(f"GET {shown} failed: the body did not arrive within {named:.3g} s")
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > _MAX_BODY:
            raise DriverError(f"GET {shown}: the body is larger than {_MAX_BODY // (1024 * 1024)} MiB")
        chunks.append(chunk)


def _reason(reason: Any, limit: float) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return (f"TLS certificate verification failed ({reason.verify_message}); set ca_bundle to the CA "
                "that signed the server's certificate, or verify_ssl: false")
    if isinstance(reason, TimeoutError):
        return f"no answer within {limit:.3g} s"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason)


def mapping_driver(parse: Callable[[str, str], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The ext_pillar function of a driver whose per-minion URL answers a body ``parse(text, what)``
    turns into a mapping (``what`` names the URL in errors)."""

    def ext_pillar(minion_id: str, pillar: dict, url: str, with_grains: bool = False,
                   header_dict: Mapping[str, Any] | None = None, auth: Any = None, username: str | None = None,
                   password: str | None = None, namespace: str | None = None, timeout: float | None = None,
                   verify_ssl: bool = True, ca_bundle: str | None = None, *,
                   grains: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if not isinstance(with_grains, bool):
            raise DriverError(f"with_grains must be true or false, got {with_grains!r}")
        full = build_url(url, minion_id, with_grains, grains or {})
        body = get(full, timeout=timeout, verify_ssl=verify_ssl, ca_bundle=ca_bundle, header_dict=header_dict,
                   username=username, password=password, auth=auth)
        return _nest(parse(body, f"the body of {_shown(full)}"), namespace)

    return ext_pillar


def _nest(data: dict, namespace: Any) -> dict:
    if namespace is None or namespace == "":
        return data
    if not isinstance(namespace, str):
        raise DriverError(f"namespace must be a string, got {namespace!r}")
    return {namespace: data}
