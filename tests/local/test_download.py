"""``orch run JOB --download``: the job's data fetched before any rank starts (orchestrator/local/download.py).

The network is never the internet here: ``$ORCH_MNIST_MIRROR`` points MNIST's download at a local HTTP
server (python's http.server on 127.0.0.1) serving the real files, a wrong file, or at a closed port
(offline, as CI is). The tests that serve the real files skip with the reason where MNIST is absent.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from mnist_mirror import HAVE_MNIST, MNIST_DIR, MNIST_NAMES, NO_MNIST, Mirror, closed_port_url
from support import ROOT

from orchestrator.errors import ConfigError
from orchestrator.local.download import download_dir, fetch_data
from orchestrator.spec.job import load_job


@pytest.fixture
def serve() -> Iterator[type[Mirror]]:
    started: list[Mirror] = []

    class Started(Mirror):
        def __init__(self, folder: Path) -> None:
            super().__init__(folder)
            started.append(self)

    yield Started
    for mirror in started:
        mirror.close()


def test_offline_download_is_exit_75_with_the_fix_and_no_job_folder(
        tmp_path: Path, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    clean_env.setenv("ORCH_MNIST_MIRROR", closed_port_url())
    code = main(["run", "mnist", "--download", "--job-root", str(tmp_path / "jobs")])
    out, err = capsys.readouterr()
    assert code == 75, err
    data = tmp_path / "cache" / "orch" / "data"
    assert f"data directory {data} (--download" in out
    assert f"could not download the data of job mnist into {data}: " in err and "Connection refused" in err
    assert "offline" in err and "HINT: " in err and "docs/writing-a-job.md#getting-the-data" in err
    assert not (tmp_path / "jobs").exists()  # nothing started, nothing left behind
    assert not list((data / "MNIST" / "raw").glob("*"))  # no partial file either


def test_without_a_data_directory_the_error_hints_at_download(
        tmp_path: Path, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    assert main(["run", "mnist", "--job-root", str(tmp_path / "jobs")]) == 2
    err = capsys.readouterr().err
    assert "job mnist needs a data directory" in err and "orch run mnist --download" in err.split("HINT: ")[1]


@pytest.mark.parametrize(("argv", "says"), [
    (["run", str(ROOT / "tests" / "jobs" / "faulty.py"), "--download"], "job faulty cannot download its data"),
    (["run", "train.py", "--download"], "--download fetches a job's data"),
    (["run", "--resume", ".", "--download"], "--resume takes no script, -m, --gpus-per-task, --launch, --download"),
])
def test_download_is_refused_where_there_is_nothing_to_download(
        argv: list[str], says: str, tmp_path: Path, clean_env: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    (tmp_path / "train.py").write_text("print('hi')\n", encoding="utf-8")
    (tmp_path / "job.json").write_text("{}", encoding="utf-8")
    assert main([*argv, "--job-root", str(tmp_path / "jobs")]) == 2
    err = capsys.readouterr().err
    assert says in err and "HINT: " in err


def test_the_default_folder_is_the_users_cache_and_a_given_one_wins(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert download_dir(None, env) == tmp_path / "xdg" / "orch" / "data"
    assert oct((tmp_path / "xdg" / "orch").stat().st_mode & 0o777) == "0o700"
    assert download_dir(str(tmp_path / "mine"), env) == tmp_path / "mine"
    assert download_dir(None, {"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".cache" / "orch" / "data"
    with pytest.raises(ConfigError, match="no folder to download into") as info:
        download_dir(None, {"ORCH_CACHE_DIR": "off"})
    assert "--data-dir" in (info.value.hint or "")


def test_a_mirror_serving_a_wrong_file_leaves_nothing_behind(tmp_path: Path, serve: type[Mirror],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    served = tmp_path / "served"
    served.mkdir()
    for name in MNIST_NAMES:
        (served / name).write_bytes(b"not MNIST")
    mirror = serve(served)
    monkeypatch.setenv("ORCH_MNIST_MIRROR", mirror.url)
    data = tmp_path / "data"
    with pytest.raises(ConfigError, match=r"no mirror served a good train-images-idx3-ubyte\.gz") as info:
        fetch_data(load_job("mnist", {}, tmp_path), data, io.StringIO())
    assert "ORCH_MNIST_MIRROR" in (info.value.hint or "")
    assert list((data / "MNIST" / "raw").iterdir()) == []  # no damaged file, no .part


@pytest.mark.mnist
@pytest.mark.skipif(not HAVE_MNIST, reason=NO_MNIST)
def test_download_from_a_mirror_fetches_the_four_files_once(tmp_path: Path, serve: type[Mirror],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = serve(MNIST_DIR / "MNIST" / "raw")
    monkeypatch.setenv("ORCH_MNIST_MIRROR", mirror.url.rstrip("/"))  # with or without the slash
    data = tmp_path / "data"
    out = io.StringIO()
    assert fetch_data(load_job("mnist", {}, tmp_path), data, out) == data
    raw = data / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(MNIST_NAMES)
    for name in MNIST_NAMES:
        got, want = (raw / name).read_bytes(), (MNIST_DIR / "MNIST" / "raw" / name).read_bytes()
        assert hashlib.md5(got).digest() == hashlib.md5(want).digest(), name
    assert f"downloading {mirror.url}train-images-idx3-ubyte.gz" in out.getvalue()
    asked = len(mirror.requests)
    fetch_data(load_job("mnist", {}, tmp_path), data, io.StringIO())  # all there: nothing is asked for
    assert len(mirror.requests) == asked
