"""timezone.system and locale.present/system.

Changing the host's timezone or locale would change it for everyone on this machine, so:
* on the host, test mode runs for real, and where systemd is installed but not running (this
  machine, CI) timezone.system fails as Salt 3008.3's does there (timedatectl cannot operate);
* the file-based methods (Debian without timedatectl / without systemd) are applied for real to a
  sandbox root holding etc/ and the real zoneinfo;
* generating a locale asserts the command it would run."""

from __future__ import annotations

import os
import shutil

import pytest
from statehelpers import read, write

from runtime.states import StateContext, locale, timezone
from runtime.states._service_init import offline

RUN, TEST = StateContext(), StateContext(test=True)


@pytest.mark.skipif(not (offline() and shutil.which("timedatectl")),
                    reason="optional: needs timedatectl without a running systemd (Salt's failing case)")
def test_timezone_on_a_host_without_a_running_systemd_fails_as_salt_does():
    for ctx in (TEST, RUN):
        ret = timezone.system(ctx, "Europe/Berlin")
        assert ret["result"] is False and ret["changes"] == {}
        assert "timedatectl failed: System has not been booted with systemd" in ret["comment"]


@pytest.fixture
def tzroot(tmp_path):
    if not os.path.isdir("/usr/share/zoneinfo/Europe"):
        pytest.skip("optional: needs tzdata")
    root = tmp_path / "root"
    (root / "etc/default").mkdir(parents=True)
    (root / "usr/share").mkdir(parents=True)
    os.symlink("/usr/share/zoneinfo", root / "usr/share/zoneinfo")
    os.symlink(str(root / "usr/share/zoneinfo/Etc/UTC"), root / "etc/localtime")
    (root / "etc/timezone").write_text("Etc/UTC\n")
    (root / "etc/adjtime").write_text("0.0 0 0.0\n0\nUTC\n")
    return timezone.Files(str(root))


def test_timezone_file_method_for_real(tzroot):
    ret = timezone.apply_system(TEST, "Europe/Berlin", True, tzroot)
    assert (ret["result"], ret["comment"]) == (None, "Timezone Europe/Berlin needs to be set")
    assert read(tzroot.path("/etc/timezone")) == "Etc/UTC\n"
    ret = timezone.apply_system(RUN, "Europe/Berlin", True, tzroot)
    assert ret == {"name": "Europe/Berlin", "changes": {"timezone": "Europe/Berlin"}, "result": True,
                   "comment": "Set timezone Europe/Berlin"}
    assert read(tzroot.path("/etc/timezone")) == "Europe/Berlin\n"
    assert os.path.realpath(tzroot.path("/etc/localtime")).endswith("/Europe/Berlin")
    again = timezone.apply_system(RUN, "Europe/Berlin", True, tzroot)
    assert again["result"] is True and again["changes"] == {}
    ret = timezone.apply_system(RUN, "Europe/Berlin", False, tzroot)
    assert ret["changes"] == {"utc": False} and read(tzroot.path("/etc/adjtime")).endswith("LOCAL\n")
    ret = timezone.apply_system(RUN, "Nowhere/Atlantis", True, tzroot)
    assert ret["result"] is False and "Zone does not exist: /usr/share/zoneinfo/Nowhere/Atlantis" in ret["comment"]


def test_locale_on_the_host_in_test_mode():
    assert locale.present(TEST, "C.UTF-8") == {"name": "C.UTF-8", "changes": {}, "result": True,
                                               "comment": "Locale C.UTF-8 is already present"}
    missing = "zu_ZA.UTF-8"
    if locale.normalize(missing) not in {locale.normalize(x) for x in locale.available()}:
        assert locale.present(TEST, missing)["comment"] == f"Locale {missing} needs to be generated"
    assert locale.normalize("en_US.UTF-8") == "en_US.utf8"
    # generating changes the host for everyone: the command a run would use
    assert locale.generate_command("en_US.UTF-8")[-1] in ("en_US.UTF-8 UTF-8", "--quiet")


def test_locale_files_for_real(tmp_path):
    files = locale.Files(str(tmp_path))
    write(files.path("/usr/share/i18n/SUPPORTED"), "en_US.UTF-8 UTF-8\nde_DE.UTF-8 UTF-8\n")
    write(files.path("/etc/locale.gen"), "# en_US.UTF-8 UTF-8\n# de_DE.UTF-8 UTF-8\n")
    assert locale.enable_in_locale_gen(files, "de_DE.UTF-8") is True
    assert read(files.path("/etc/locale.gen")) == "# en_US.UTF-8 UTF-8\nde_DE.UTF-8 UTF-8\n"
    assert locale.enable_in_locale_gen(files, "de_DE.UTF-8") is False
    with pytest.raises(locale.LocaleError):
        locale.enable_in_locale_gen(files, "xx_XX.UTF-8")
    write(files.path("/etc/default/locale"), "LANG=C.UTF-8\nLC_TIME=C\n")
    ret = locale.apply_system(TEST, "de_DE.UTF-8", files)
    assert (ret["result"], ret["comment"]) == (None, "System locale de_DE.UTF-8 needs to be set")
    ret = locale.apply_system(RUN, "de_DE.UTF-8", files)
    assert ret["changes"] == {"locale": "de_DE.UTF-8"}
    assert read(files.path("/etc/default/locale")) == 'LANG="de_DE.UTF-8"\nLC_TIME=C\n'
    assert locale.apply_system(RUN, "de_DE.UTF-8", files)["comment"] == "System locale de_DE.UTF-8 already set"
