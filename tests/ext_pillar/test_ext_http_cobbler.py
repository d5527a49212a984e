"""http_json / http_yaml against real HTTP and HTTPS servers, cobbler against an XML-RPC server."""

from __future__ import annotations

import base64
import json
import time

import pytest
from ext_pillar_helpers import compile_pillar, make_opts

from ext_pillar import DriverError, cobbler, http_json, http_yaml
from tests.netutil import free_port

# -- http_json / http_yaml ----------------------------------------------------------------------


def test_http_json_url_with_minion_id_and_namespace(tmp_path, http_server):
    http_server.route("/hosts/web01", json.dumps({"rack": 3, "tags": ["a"]}))
    opts = make_opts(tmp_path, ext_pillar=[{"http_json": {"url": http_server.base + "/hosts/%s",
                                                          "namespace": "inventory"}}])
    assert compile_pillar(opts, "web01").pillar == {"inventory": {"rack": 3, "tags": ["a"]}}


def test_http_yaml_with_grains_in_the_url(tmp_path, http_server):
    http_server.route("/roles/web/Debian%2012", "packages: [nginx]\nport: 0755\n", content_type="text/yaml")
    opts = make_opts(tmp_path, ext_pillar=[{"http_yaml": {"url": http_server.base + "/roles/<role>/<os:name>",
                                                          "with_grains": True}}])
    result = compile_pillar(opts, "web01", grains={"id": "web01", "role": "web", "os": {"name": "Debian 12"}})
    assert result.pillar == {"packages": ["nginx"], "port": 755}


def test_minion_id_is_quoted_in_the_url(http_server):
    http_server.route("/h/a%2Fb%20c", "{}")
    assert http_json.ext_pillar("a/b c", {}, http_server.base + "/h/%s") == {}
    assert http_server.requests[-1]["path"] == "/h/a%2Fb%20c"


def test_headers_and_basic_auth(http_server):
    http_server.route("/x", '{"ok": 1}')
    http_json.ext_pillar("web01", {}, http_server.base + "/x", header_dict={"X-Token": "t1"},
                         username="salt", password="pw")
    headers = http_server.requests[-1]["headers"]
    assert headers["X-Token"] == "t1"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"salt:pw").decode()
    http_json.ext_pillar("web01", {}, http_server.base + "/x", auth=["u", "p"])
    assert http_server.requests[-1]["headers"]["Authorization"] == "Basic " + base64.b64encode(b"u:p").decode()


def test_missing_grain(http_server):
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, http_server.base + "/<role>", with_grains=True, grains={})
    assert info.value.message == "the url needs grain 'role', which minion web01 does not have"


@pytest.mark.parametrize(("route", "driver", "message"), [
    ({"status": 404, "body": "nope"}, http_json, "GET {url} answered HTTP 404 Not Found"),
    ({"status": 500, "body": "boom"}, http_json, "GET {url} answered HTTP 500 Internal Server Error"),
    ({"body": "{oops"}, http_json, "the body of {url} is not JSON: Expecting property name enclosed in double "
                                   "quotes at line 1 column 2"),
    ({"body": "[1, 2]"}, http_json, "the body of {url} is a JSON array, not an object"),
    ({"body": ""}, http_json, "the body of {url} is empty (a JSON object was expected)"),
    ({"body": "- 1\n"}, http_yaml, "the body of {url} is a YAML list, not a mapping"),
    ({"body": b"\xff\xfe", "content_type": "application/json; charset=utf-8"}, http_json,
     "GET {url}: the body is not valid utf-8 text ('utf-8' codec can't decode byte 0xff in position 0: invalid "
     "start byte)"),
])
def test_http_errors(tmp_path, http_server, route, driver, message):
    body = route.pop("body")
    url = http_server.route("/p/web01", body, **route)
    name = driver.__name__.rsplit(".", 1)[1]
    opts = make_opts(tmp_path, ext_pillar=[{name: {"url": http_server.base + "/p/%s"}}])
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        f"Failed to load ext_pillar {name} for minion web01: {message.format(url=url)}"]


def test_http_timeout(tmp_path, http_server):
    url = http_server.route("/slow", "{}", delay=2)
    started = time.monotonic()
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, url, timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert info.value.message == f"GET {url} failed: no answer within 0.3 s"


def test_http_bounded_by_ext_pillar_timeout(tmp_path, http_server):
    url = http_server.route("/slow", "{}", delay=2)
    opts = make_opts(tmp_path, ext_pillar=[{"http_json": {"url": url}}], ext_pillar_timeout=0.4)
    started = time.monotonic()
    errors = compile_pillar(opts, "web01").pillar["_errors"]
    assert time.monotonic() - started < 1.5
    assert errors == [f"Failed to load ext_pillar http_json for minion web01: GET {url} failed: no answer within "
                      "0.4 s"]


def test_connection_refused():
    url = f"http://127.0.0.1:{free_port()}/x"
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, url)
    assert info.value.message == f"GET {url} failed: Connection refused"


def test_only_http_urls(tmp_path):
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, f"file://{tmp_path}/f.json")
    assert info.value.message == f"url must be http:// or https://, got 'file://{tmp_path}/f.json'"


def test_credentials_are_not_shown_in_errors(http_server):
    url = http_server.base.replace("http://", "http://user:secret@") + "/missing"
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, url)
    assert "secret" not in info.value.message
    assert info.value.message == f"GET {http_server.base}/missing answered HTTP 404 Not Found"
    assert http_server.requests[-1]["headers"]["Authorization"] == "Basic " + base64.b64encode(b"user:secret").decode()


def test_tls_is_verified_by_default(https_server, pki):
    url = https_server.route("/h/web01", '{"tls": true}')
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, https_server.base + "/h/%s")
    assert info.value.message == (f"GET {url} failed: TLS certificate verification failed (unable to get local "
                                  "issuer certificate); set ca_bundle to the CA that signed the server's "
                                  "certificate, or verify_ssl: false")
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, url, ca_bundle=pki.other_ca_file)
    assert "TLS certificate verification failed" in info.value.message
    assert https_server.requests == []  # no request was ever sent over an unverified connection


def test_tls_with_ca_bundle_and_with_verification_off(tmp_path, https_server, pki):
    url = https_server.route("/h/web01", '{"tls": true}')
    opts = make_opts(tmp_path, ext_pillar=[{"http_json": {"url": https_server.base + "/h/%s",
                                                          "ca_bundle": pki.ca_file}}])
    assert compile_pillar(opts, "web01").pillar == {"tls": True}
    assert http_yaml.ext_pillar("web01", {}, url, verify_ssl=False) == {"tls": True}


def test_unreadable_ca_bundle(tmp_path, https_server):
    with pytest.raises(DriverError) as info:
        http_json.ext_pillar("web01", {}, https_server.base + "/x", ca_bundle=str(tmp_path / "none.pem"))
    assert info.value.message == f"cannot read ca_bundle {tmp_path / 'none.pem'}: No such file or directory"


# -- cobbler -----------------------------------------------------------------------------------

BLENDED = {"status": "production", "profile": "web-profile", "mgmt_classes": ["web"],
           "parameters": {"role": "web", "ntp": ["10.0.0.1"]}, "hostname": "web01"}


def _cobbler_opts(tmp_path, server, ext, **keys):
    return make_opts(tmp_path, ext_pillar=ext, **{"cobbler.url": server.url, **keys})


def test_cobbler_logs_in_and_fetches_blended_data(tmp_path, cobbler):
    cobbler.systems["web01"] = BLENDED
    cobbler.users["salt"] = "s3cret"
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {"key": "cobbler", "only": ["parameters", "status"]}}],
                         **{"cobbler.user": "salt", "cobbler.password": "s3cret"})
    result = compile_pillar(opts, "web01")
    assert result.pillar == {"cobbler": {"parameters": {"role": "web", "ntp": ["10.0.0.1"]},
                                         "status": "production"}}
    assert [c[0] for c in cobbler.calls] == ["login", "get_blended_data"]
    assert cobbler.calls[0] == ("login", "salt", "s3cret")
    assert cobbler.calls[1] == ("get_blended_data", None, "web01")


def test_cobbler_without_user_does_not_log_in(tmp_path, cobbler):
    cobbler.systems["web01"] = BLENDED
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {}}])
    assert compile_pillar(opts, "web01").pillar == BLENDED
    assert [c[0] for c in cobbler.calls] == ["get_blended_data"]


def test_cobbler_bad_password(tmp_path, cobbler):
    cobbler.users["salt"] = "right"
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {}}], **{"cobbler.user": "salt",
                                                                   "cobbler.password": "wrong"})
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        f"Failed to load ext_pillar cobbler for minion web01: cobbler at {cobbler.url}: login as 'salt' failed: the "
        "server answered fault 1: <class 'cobbler.cexceptions.CX'>:'login failed (salt)'"]
    assert [c[0] for c in cobbler.calls] == ["login"]


def test_cobbler_unknown_system(tmp_path, cobbler):
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {"key": "cobbler"}}])
    assert compile_pillar(opts, "db09").pillar["_errors"] == [
        f"Failed to load ext_pillar cobbler for minion db09: cobbler at {cobbler.url}: get_blended_data for db09 "
        "failed: the server answered fault 1: <class 'cobbler.cexceptions.CX'>:'internal error, unknown system "
        "name db09'"]


def test_cobbler_server_down(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/cobbler_api"
    opts = make_opts(tmp_path, ext_pillar=[{"cobbler": {}}], **{"cobbler.url": url})
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        f"Failed to load ext_pillar cobbler for minion web01: cobbler at {url}: get_blended_data for web01 failed: "
        "Connection refused"]


def test_cobbler_wrong_path_is_an_http_error(tmp_path, cobbler):
    url = cobbler.url.replace("/cobbler_api", "/api")
    with pytest.raises(DriverError) as info:
        cobbler_driver_call(url)
    assert info.value.message == f"cobbler at {url}: get_blended_data for web01 failed: HTTP 404 Not Found"


def cobbler_driver_call(url: str, **keys: str) -> dict:
    return cobbler.ext_pillar("web01", {}, opts={"cobbler.url": url, **keys})


def test_cobbler_slow_server_times_out(tmp_path, cobbler):
    cobbler.systems["web01"] = BLENDED
    cobbler.delay[0] = 2
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {}}], ext_pillar_timeout=0.3)
    started = time.monotonic()
    errors = compile_pillar(opts, "web01").pillar["_errors"]
    assert time.monotonic() - started < 1.5
    assert errors == [f"Failed to load ext_pillar cobbler for minion web01: cobbler at {cobbler.url}: "
                      "get_blended_data for web01 failed: no answer in time (ext_pillar_timeout)"]


def test_cobbler_bad_options(tmp_path, cobbler):
    opts = _cobbler_opts(tmp_path, cobbler, [{"cobbler": {"only": {"a": 1}}}])
    assert compile_pillar(opts, "web01").pillar["_errors"] == [
        "Failed to load ext_pillar cobbler for minion web01: only must be a list of keys, got {'a': 1}"]


def test_cobbler_over_tls_verifies_the_server(tmp_path, https_server, pki):
    # an HTTPS server that is not an XML-RPC endpoint: enough to see whom the driver trusts
    url = https_server.base + "/cobbler_api"
    with pytest.raises(DriverError) as info:
        cobbler_driver_call(url)
    assert info.value.message == (f"cobbler at {url}: get_blended_data for web01 failed: TLS certificate "
                                  "verification failed (unable to get local issuer certificate); set "
                                  "cobbler.ca_bundle")
    with pytest.raises(DriverError) as info:
        cobbler_driver_call(url, **{"cobbler.ca_bundle": pki.ca_file})
    assert info.value.message == (f"cobbler at {url}: get_blended_data for web01 failed: HTTP 501 Unsupported "
                                  "method ('POST')")
    with pytest.raises(DriverError) as info:
        cobbler_driver_call(url, **{"cobbler.ca_bundle": str(tmp_path / "nope.pem")})
    assert info.value.message == f"cannot read cobbler.ca_bundle {tmp_path / 'nope.pem'}: No such file or directory"
