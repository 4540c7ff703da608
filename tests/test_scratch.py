"""Where the test run keeps its temporary folders (tests/conftest.py ``scratch_in_memory``, issue 44): a folder of
its own on a tmpfs with room, unless TMPDIR says otherwise; never a folder it did not make for itself."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.conftest import scratch_in_memory, tmpfs_mount

SHM = Path("/dev/shm")


@pytest.fixture
def no_tmpdir(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A process environment without TMPDIR (the run's own is restored afterwards, as is tempfile's cache)."""
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", tempfile.tempdir)
    return monkeypatch


def test_a_tmpdir_that_is_set_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert scratch_in_memory(SHM) is None
    assert os.environ["TMPDIR"] == str(tmp_path)


def test_a_folder_that_is_no_tmpfs_mount_is_not_used(no_tmpdir: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert scratch_in_memory(tmp_path) is None  # a plain folder (even one inside a tmpfs) is no mount of its own
    assert "TMPDIR" not in os.environ and not list(tmp_path.iterdir())


def test_a_tmpfs_is_used_with_room_and_through_a_private_folder_of_ours(no_tmpdir: pytest.MonkeyPatch) -> None:
    if not tmpfs_mount(SHM):
        pytest.skip(f"{SHM} is no tmpfs on this machine: nothing to put the run's folders on")
    name = f"pytest-dws-test-{os.getpid()}"
    own = SHM / name
    try:
        assert scratch_in_memory(SHM, room=1 << 62, name=name) is None  # not that much room: the system's
        assert "TMPDIR" not in os.environ and not own.exists()
        own.mkdir(mode=0o700)
        own.chmod(0o777)  # a folder others may write into is never used
        assert scratch_in_memory(SHM, name=name) is None and "TMPDIR" not in os.environ
        own.chmod(0o700)
        assert scratch_in_memory(SHM, name=name) == own
        assert os.environ["TMPDIR"] == str(own) and tempfile.gettempdir() == str(own)
    finally:
        if own.exists():
            own.rmdir()
