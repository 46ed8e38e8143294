"""Issue 40 item 2: every whole file a run writes is written atomically (a temporary file in the same
folder, then os.replace), so a kill mid-write leaves the old content or the new, never a cut-short
process.json; and a file cut short by older code is reported by name, not raised as a bare
JSONDecodeError."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest

from kimi_runbooks.rundir import RunFolder, UnreadableJSON, read_json


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_write_that_fails_midway_leaves_the_old_content(run_folder: RunFolder) -> None:
    run_folder.save_json(RunFolder.PROCESS, {"pgid": 1234})
    with pytest.raises(UnicodeEncodeError):  # fails after the text is made, as a full disk would
        run_folder.save_text(RunFolder.PROCESS, '{"pgid": 5678, "note": "\ud800"}')
    assert json.loads(run_folder.process.read_text()) == {"pgid": 1234}
    assert _leftovers(run_folder.path) == []


def test_a_writer_killed_mid_write_never_leaves_a_cut_short_file(run_folder: RunFolder) -> None:
    """A child rewrites process.json (4 MB) in a loop and is SIGKILLed at random moments: the file
    always parses as one of the two documents."""
    docs = [json.dumps({"which": w, "pad": w * 4_000_000}) for w in ("a", "b")]
    rng = random.Random(40)
    for _ in range(10):
        pid = os.fork()
        if pid == 0:  # the child: write until killed
            try:
                while True:
                    for text in docs:
                        run_folder.save_text(RunFolder.PROCESS, text)
            finally:
                os._exit(0)
        deadline = time.monotonic() + 10
        while not run_folder.process.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.005, 0.05))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert json.loads(run_folder.process.read_text())["which"] in ("a", "b")
    for name in _leftovers(run_folder.path):  # a kill between the temp file and the rename leaves one
        assert name.startswith(f".{RunFolder.PROCESS}.")


def test_atomic_writes_keep_modes_and_make_executables(run_folder: RunFolder) -> None:
    script = run_folder.save_text("node.sh", "#!/bin/sh\n", executable=True)
    assert script.stat().st_mode & stat.S_IXUSR
    plain = run_folder.save_text("notes.txt", "one")
    plain.chmod(0o640)
    run_folder.save_text("notes.txt", "two")
    assert stat.S_IMODE(plain.stat().st_mode) == 0o640 and plain.read_text() == "two"


def test_binary_copies_and_copied_trees_are_atomic_too(run_folder: RunFolder, tmp_path: Path) -> None:
    source = tmp_path / "tok"
    source.mkdir()
    (source / "model.bin").write_bytes(b"\xff\x00" * 10)
    (source / "config.json").write_text("{}")
    run_folder.save_copy(source / "model.bin", "model.bin")
    tree = run_folder.copy_tree(source, "tokenizer")
    assert (run_folder / "model.bin").read_bytes() == b"\xff\x00" * 10
    assert sorted(p.name for p in tree.iterdir()) == ["config.json", "model.bin"]


def test_a_cut_short_json_file_is_named_with_the_fix(run_folder: RunFolder) -> None:
    run_folder.process.write_text('{"launcher": "emulator", "pg')
    with pytest.raises(UnreadableJSON, match=r"process\.json is not readable JSON .*cut short.*Fix: delete it"):
        read_json(run_folder.process)
    with pytest.raises(ValueError):  # what callers that skip bad files catch
        run_folder.read_json(RunFolder.PROCESS)


def test_a_cut_short_fingerprint_refuses_the_folder_with_the_reason(run_folder: RunFolder) -> None:
    """A runbook's start reads the folder's fingerprint: cut short, it is reported, not raised."""
    from kimi_runbooks.runbook import PlanInvalid
    from kimi_runbooks.runbook.fingerprint import RESULT_FILES, check_resume

    run_folder.save_json(RESULT_FILES[0], {})
    (run_folder / RunFolder.FINGERPRINT).write_text('{"platform": "h2')
    with pytest.raises(PlanInvalid, match=r"its fingerprint cannot be read \(.*fingerprint\.json is not readable JSON"):
        check_resume(run_folder, {"platform": "h200"}, force=False)
