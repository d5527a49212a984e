"""Fixtures for the ext_pillar tests: a compile helper and real servers on 127.0.0.1.

* ``http_server`` / ``https_server``: http.server in a thread, routes set per test;
  the TLS one serves a certificate signed by a throw-away CA made with ``cryptography``.
* ``cobbler``: a cobbler-compatible XML-RPC server (login, token_check, get_blended_data).
* ``postgres`` (tests/pgserver.py, for the whole suite): a private PostgreSQL server.
"""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import os
import secrets
import socketserver
import ssl
import threading
import time
import xmlrpc.server
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

# -- HTTP -----------------------------------------------------------------------------


@dataclass
class Route:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "application/json"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class HttpServer:
    base: str
    routes: dict[str, Route]
    requests: list[dict[str, Any]]

    def route(self, path: str, body: bytes | str = b"", **kwargs: Any) -> str:
        self.routes[path] = Route(body, **kwargs)
        return self.base + path


def _handler(routes: dict[str, Route], requests: list[dict[str, Any]]) -> type:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            requests.append({"path": self.path, "headers": dict(self.headers)})
            route = routes.get(self.path)
            if route is None:
                self.send_error(404, "Not Found")
                return
            if route.delay:
                time.sleep(route.delay)
            body = route.body.encode() if isinstance(route.body, str) else route.body
            try:
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in route.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def _serving(server: socketserver.BaseServer) -> Iterator[int]:
    """Serve ``server`` from a thread; yields its port; shut down and closed on the way out."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def _http_server(tls: ssl.SSLContext | None = None) -> Iterator[HttpServer]:
    """http.server on 127.0.0.1 with routes set per test; https when given a TLS context."""
    routes: dict[str, Route] = {}
    requests: list[dict[str, Any]] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes, requests))
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    with _serving(server) as port:
        yield HttpServer(f"{'https' if tls else 'http'}://127.0.0.1:{port}", routes, requests)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    with _http_server() as server:
        yield server


@dataclass
class Pki:
    ca_file: str
    cert_file: str
    key_file: str
    other_ca_file: str


def _make_pki(directory: str) -> Pki:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def ca(name: str) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                             key_encipherment=False, data_encipherment=False, key_agreement=False,
                                             key_cert_sign=True, crl_sign=True, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return key, cert

    ca_key, ca_cert = ca("saltpan test CA")
    _, other_cert = ca("some other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ("ca.pem", "other-ca.pem", "server.pem", "server.key")}
    pem = serialization.Encoding.PEM
    with open(paths["ca.pem"], "wb") as fh:
        fh.write(ca_cert.public_bytes(pem))
    with open(paths["other-ca.pem"], "wb") as fh:
        fh.write(other_cert.public_bytes(pem))
    with open(paths["server.pem"], "wb") as fh:
        fh.write(cert.public_bytes(pem))
    with open(paths["server.key"], "wb") as fh:
        fh.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return Pki(paths["ca.pem"], paths["server.pem"], paths["server.key"], paths["other-ca.pem"])


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return _make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def https_server(pki: Pki) -> Iterator[HttpServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    with _http_server(context) as server:
        yield server


# -- cobbler ----------------------------------------------------------------------------


@dataclass
class CobblerServer:
    url: str
    systems: dict[str, dict[str, Any]]
    users: dict[str, str]
    calls: list[tuple]
    tokens: set[str]
    delay: list[float]


@pytest.fixture
def cobbler() -> Iterator[CobblerServer]:
    """Speaks the part of Cobbler's XML-RPC API the driver uses, at /cobbler_api."""
    systems: dict[str, dict[str, Any]] = {}
    users: dict[str, str] = {}
    calls: list[tuple] = []
    tokens: set[str] = set()
    delay = [0.0]

    class Api:
        def login(self, user: str, password: str) -> str:
            calls.append(("login", user, password))
            if users.get(user) != password or not password:
                raise xmlrpc.server.Fault(1, f"<class 'cobbler.cexceptions.CX'>:'login failed ({user})'")
            token = secrets.token_urlsafe(16)
            tokens.add(token)
            return token

        def token_check(self, token: str) -> bool:
            calls.append(("token_check", token))
            if token not in tokens:
                raise xmlrpc.server.Fault(1, f"<class 'cobbler.cexceptions.CX'>:'invalid token: {token}'")
            return True

        def get_blended_data(self, profile: Any, system: Any) -> dict[str, Any]:
            calls.append(("get_blended_data", profile, system))
            if delay[0]:
                time.sleep(delay[0])
            if system not in systems:
                raise xmlrpc.server.Fault(1, "<class 'cobbler.cexceptions.CX'>:'internal error, unknown "
                                             f"system name {system}'")
            return systems[system]

    class Handler(xmlrpc.server.SimpleXMLRPCRequestHandler):
        rpc_paths = ("/cobbler_api",)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(xmlrpc.server.SimpleXMLRPCServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), requestHandler=Handler, allow_none=True, logRequests=False)
    server.register_instance(Api())
    with _serving(server) as port:
        yield CobblerServer(f"http://127.0.0.1:{port}/cobbler_api", systems, users, calls, tokens, delay)
