"""test.ping and the other instant functions run on the minion's event loop, without a job thread,
and return what they return in one; a synced custom module (which may shadow them) sends them back
to a job thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest

from runtime.crypt.identity import Identity
from runtime.minion.daemon import Minion


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted: list[str] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        self.submitted.append(getattr(fn, "__name__", repr(fn)))
        return super().submit(fn, *args, **kwargs)


class RecordingSession:
    def __init__(self) -> None:
        self.delivered: list[Any] = []

    async def request(self, message: Any, timeout: float | None = None, tries: int | None = None) -> Any:
        self.delivered.append(message)
        return None


@pytest.fixture
def minion(tmp_path: Path) -> Minion:
    opts = {"id": "im1", "pki_dir": str(tmp_path / "pki"), "cachedir": str(tmp_path / "cache"),
            "refusal_log_interval": 60, "file_client": "local", "file_roots": {"base": [str(tmp_path / "srv")]}}
    return Minion(opts, identity=Identity.generate(), grains={"id": "im1"}, quiet=True, executor=CountingExecutor())


def run_jobs(minion: Minion, *jobs: dict[str, Any]) -> list[Any]:
    session = RecordingSession()

    async def main() -> None:
        minion.session = session  # type: ignore[assignment]
        for job in jobs:
            await minion.run_job(job)

    asyncio.run(main())
    return session.delivered


def test_instant_functions_run_without_a_job_thread(minion: Minion) -> None:
    delivered = run_jobs(minion, {"jid": "20990101000000000001", "fun": "test.ping"},
                         {"jid": "20990101000000000002", "fun": "test.echo", "arg": ["hi"]},
                         {"jid": "20990101000000000003", "fun": "test.echo", "arg": []},
                         {"jid": "20990101000000000004", "fun": "test.sleep", "arg": ["0"]})
    assert [(r.jid, r.ret, r.retcode, r.success) for r in delivered[:2]] == [
        ("20990101000000000001", True, 0, True), ("20990101000000000002", "hi", 0, True)]
    bad = delivered[2]                     # a wrong call is the same error return as from a thread
    assert (bad.retcode, bad.success) == (1, False) and bad.ret.startswith("ERROR: Passed invalid arguments to test.echo")
    assert delivered[3].ret is True
    assert minion.executor.submitted == ["execute"]     # test.sleep only
    assert minion.jobs.running() == []


def test_a_synced_custom_module_sends_them_back_to_a_job_thread(minion: Minion, tmp_path: Path) -> None:
    modules = tmp_path / "cache" / "extmods" / "modules"
    modules.mkdir(parents=True)
    (modules / "test.py").write_text("def ping():\n    return 'custom pong'\n")
    delivered = run_jobs(minion, {"jid": "20990101000000000005", "fun": "test.ping"})
    assert delivered[0].ret == "custom pong"
    assert minion.executor.submitted == ["execute"]
