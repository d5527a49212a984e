"""runtime/config.py's option table against Salt 3008's defaults and units
(runtime/data/salt_defaults.json, captured by tools/capture_salt_defaults.py), and the warnings for
keys saltpan does not implement."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from runtime import config
from runtime.minion.session import Backoff

ROOT = Path(__file__).resolve().parents[2]
SALT = json.loads((ROOT / "runtime" / "data" / "salt_defaults.json").read_text(encoding="utf-8"))


def _roles(option: config.Option) -> list[str]:
    return ["minion", "master"] if option.role == "both" else [option.role]


@pytest.mark.parametrize("key", sorted(config.OPTIONS))
def test_option_matches_salt_or_says_why(key: str) -> None:
    option = config.OPTIONS[key]
    salt = {role: SALT[role][key] for role in _roles(option) if key in SALT[role]}
    if option.salt:
        # a documented difference: it must not be a stale note on a default that now matches
        assert not salt or any(value != option.default for value in salt.values()) \
            or "reads it" in option.salt or option.salt.startswith("as Salt"), (
            f"{key}: saltpan's default equals Salt's; drop the note {option.salt!r}")
        return
    assert salt, f"{key}: not among Salt 3008's {option.role} options: say why in Option(salt=...)"
    for role, value in salt.items():
        assert value == option.default, (f"{key}: Salt 3008's {role} default is {value!r}, saltpan's "
                                         f"{option.default!r} (in {option.unit or 'the same unit'})")


def test_salt_units_for_the_reconnect_keys() -> None:
    # Salt documents recon_default / recon_max in milliseconds (defaults 1000 / 10000)
    for key, value in (("recon_default", 1000), ("recon_max", 10000)):
        assert SALT["minion"][key] == value == config.OPTIONS[key].default
        assert config.OPTIONS[key].unit == "ms"
    assert SALT["minion"]["recon_randomize"] is True is config.OPTIONS["recon_randomize"].default


def test_backoff_reads_milliseconds() -> None:
    backoff = Backoff.from_opts({"recon_default": 200, "recon_max": 2000, "recon_randomize": False})
    assert [backoff.failed() for _ in range(5)] == pytest.approx([0.2, 0.6, 1.4, 2.0, 2.0])
    assert Backoff.from_opts({}).initial == 1.0 and Backoff.from_opts({}).maximum == 10.0


def test_every_key_of_the_table_has_a_unit_when_it_is_a_duration() -> None:
    for key, option in config.OPTIONS.items():
        words = option.doc.lower()
        if option.kind == "num" and ("seconds" in words or "milliseconds" in words):
            assert option.unit in ("s", "ms"), f"{key}: a duration without a unit"


def test_unimplemented_keys_are_named_with_what_saltpan_does(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "minion"
    conf.write_text("schedule: {x: {function: test.ping}}\nmine_functions: {network.ip_addrs: []}\n"
                    "file_recv: true\nnot_an_option_at_all: 1\n"
                    "recon_max: 5000\nstate_output: terse\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="saltpan.config"):
        opts = config.load(str(conf), "minion")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{conf}: Salt option 'schedule' is not implemented by saltpan: saltpan has no scheduler" in text
    assert "mine_functions" not in text   # implemented (docs/mine.md)
    assert f"{conf}: Salt option 'file_recv' is not implemented by saltpan: it has no effect" in text
    assert "'not_an_option_at_all' is neither a Salt 3008 option nor a saltpan one" in text
    assert "recon_max" not in text and "state_output" not in text
    assert opts["recon_max"] == 5000


def test_an_unsupported_state_output_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "minion"
    conf.write_text("state_output: filter\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="saltpan.config"):
        config.load(str(conf), "minion")
    assert "state_output 'filter' is not supported by saltpan" in caplog.text


def test_the_key_list_knows_salts_options() -> None:
    names = config.salt_option_names()
    assert {"recon_default", "mine_interval", "interface", "file_roots"} <= names
    assert config.unimplemented("recon_default") is None


@pytest.mark.skipif(not os.path.exists("/work/saltvenv/bin/python"), reason="optional: no Salt venv to re-capture")
def test_stored_salt_defaults_are_current() -> None:
    done = subprocess.run(["/work/saltvenv/bin/python", str(ROOT / "tools" / "capture_salt_defaults.py"), "--check"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
