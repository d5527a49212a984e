"""ext_pillar cobbler: the minion's blended data from a Cobbler server (XML-RPC).

    cobbler.url: https://cobbler.example.com/cobbler_api   # default http://localhost/cobbler_api
    cobbler.user: salt            # log in first when set (default: no login)
    cobbler.password: secret
    cobbler.ca_bundle: /etc/ssl/cobbler-ca.pem             # saltpan: CA for an https url (default: system CAs)

    ext_pillar:
      - cobbler:
          key: cobbler            # nest the data under this key (default: at the pillar root)
          only: [parameters, status]   # keep only these keys of the blended data

The same ``cobbler.*`` keys configure Salt's cobbler master_tops.  The call
(login and ``get_blended_data``) is bounded by ``ext_pillar_timeout``.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
import xmlrpc.client
from collections.abc import Mapping
from typing import Any

from ext_pillar import _deadline
from ext_pillar._errors import DriverError
from ext_pillar._plain import plain

DEFAULT_URL = "http://localhost/cobbler_api"
DEFAULT_TIMEOUT = 30.0


class _Transport(xmlrpc.client.Transport):
    """Plain HTTP with a socket timeout."""

    def __init__(self, timeout: float):
        super().__init__()
        self.timeout = timeout

    def make_connection(self, host: Any) -> http.client.HTTPConnection:
        conn = super().make_connection(host)
        conn.timeout = self.timeout
        return conn


class _SafeTransport(xmlrpc.client.SafeTransport):
    """HTTPS with a socket timeout and certificate verification."""

    def __init__(self, timeout: float, context: ssl.SSLContext):
        super().__init__(context=context)
        self.timeout = timeout

    def make_connection(self, host: Any) -> http.client.HTTPSConnection:
        conn = super().make_connection(host)
        conn.timeout = self.timeout
        return conn


def _server(url: str, ca_bundle: str | None) -> xmlrpc.client.ServerProxy:
    scheme = urllib.parse.urlsplit(url).scheme
    timeout = _deadline.bounded(None, DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT
    transport: xmlrpc.client.Transport
    if scheme == "https":
        try:
            context = ssl.create_default_context(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise DriverError(f"cannot read cobbler.ca_bundle {ca_bundle}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
        transport = _SafeTransport(timeout, context)
    elif scheme == "http":
        transport = _Transport(timeout)
    else:
        raise DriverError(f"cobbler.url must be an http:// or https:// URL, got {url!r}")
    return xmlrpc.client.ServerProxy(url, transport=transport, allow_none=True)


def _shown(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", "")) if parts.password \
        else url


def _failure(url: str, step: str, exc: BaseException) -> DriverError:
    if isinstance(exc, xmlrpc.client.Fault):
        why = f"the server answered fault {exc.faultCode}: {exc.faultString}"
    elif isinstance(exc, xmlrpc.client.ProtocolError):
        why = f"HTTP {exc.errcode} {exc.errmsg}"
    elif isinstance(exc, TimeoutError):
        why = "no answer in time (ext_pillar_timeout)"
    elif isinstance(exc, ssl.SSLCertVerificationError):
        why = f"TLS certificate verification failed ({exc.verify_message}); set cobbler.ca_bundle"
    elif isinstance(exc, OSError):
        why = exc.strerror or str(exc)
    else:
        why = f"{type(exc).__name__}: {exc}"
    return DriverError(f"cobbler at {_shown(url)}: {step} failed: {why}")


def ext_pillar(minion_id: str, pillar: dict, key: str | None = None, only: Any = (), *,
               opts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    opts = opts or {}
    url = opts.get("cobbler.url") or DEFAULT_URL
    user = opts.get("cobbler.user")
    password = opts.get("cobbler.password")
    if not isinstance(url, str):
        raise DriverError(f"cobbler.url must be a string, got {url!r}")
    if isinstance(only, str):
        only = [only]
    if not isinstance(only, (list, tuple)):
        raise DriverError(f"only must be a list of keys, got {only!r}")
    if key is not None and not isinstance(key, str):
        raise DriverError(f"key must be a string, got {key!r}")
    server = _server(url, opts.get("cobbler.ca_bundle"))
    if user:
        try:
            server.login(str(user), "" if password is None else str(password))
        except (xmlrpc.client.Error, OSError, http.client.HTTPException) as exc:
            raise _failure(url, f"login as {user!r}", exc) from None
    try:
        data = server.get_blended_data(None, minion_id)
    except (xmlrpc.client.Error, OSError, http.client.HTTPException) as exc:
        raise _failure(url, f"get_blended_data for {minion_id}", exc) from None
    if not isinstance(data, dict):
        raise DriverError(f"cobbler at {_shown(url)}: get_blended_data for {minion_id} returned a "
                          f"{type(data).__name__}, not a struct")
    data = plain(data)
    if only:
        data = {k: data[k] for k in only if k in data}
    return {key: data} if key else data
