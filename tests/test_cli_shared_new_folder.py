"""Two runs writing into the same new folder: one run's failure never removes the folder the other needs."""

import os
import subprocess
import sys
import threading

import pandas as pd

from changerate_bayes.cli._common import run_removing_new_folders


def test_a_failing_run_does_not_remove_the_folder_another_run_is_writing_into(tmp_path):
    # the interleaving that lost the good run's output: the failing run starts first, the good run
    # creates the folder, the failing run gives up, and only then does the good run write its file
    folder = tmp_path / "new" / "deeper"
    a_started, b_made_folder, a_done = threading.Event(), threading.Event(), threading.Event()
    outcome = {}

    def run_a(args):
        a_started.set()
        assert b_made_folder.wait(10)
        folder.mkdir(parents=True, exist_ok=True)  # as each command does before it writes
        return 2  # bad input found: fails

    def run_b(args):
        folder.mkdir(parents=True, exist_ok=True)
        b_made_folder.set()
        assert a_done.wait(10)
        (folder / "table.csv").write_text("page\n")  # FileNotFoundError if the folder was removed
        return 0

    def a():
        outcome["a"] = run_removing_new_folders(run_a, None, [folder])
        a_done.set()

    def b():
        assert a_started.wait(10)
        try:
            outcome["b"] = run_removing_new_folders(run_b, None, [folder])
        except OSError as exc:
            outcome["b"] = exc

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert outcome == {"a": 2, "b": 0}
    assert os.listdir(folder) == ["table.csv"]  # and no marker of either run is left


def test_a_failing_run_removes_the_empty_folders_it_created(tmp_path):
    folder = tmp_path / "x" / "y"
    assert run_removing_new_folders(lambda args: 2, None, [folder]) == 2
    assert os.listdir(tmp_path) == []
    assert run_removing_new_folders(lambda args: 0, None, [folder]) == 0
    assert os.listdir(folder) == []  # kept on success, without the marker


def test_a_failing_run_keeps_a_folder_that_existed(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    assert run_removing_new_folders(lambda args: 2, None, [folder]) == 2
    assert folder.is_dir() and os.listdir(folder) == []


_MAIN = "import sys; from changerate_bayes.cli import main; sys.exit(main(sys.argv[1:]))"


def test_two_processes_one_failing_one_writing_the_same_new_folder(tmp_path):
    times = [f"2024-01-{d:02d}T00:00:00Z" for d in range(1, 11)]
    pd.DataFrame({"page": "https://a.example/", "fetch_time": times, "changed": [0, 1] * 5}).to_csv(
        tmp_path / "log.csv", index=False
    )
    (tmp_path / "bad.csv").write_text("page,fetch_time,changed\n")
    out = tmp_path / "new" / "folder"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _MAIN, "schedule", str(tmp_path / log), "--out", str(out / name)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for log, name in (("bad.csv", "bad.csv"), ("log.csv", "good.csv"))
    ]
    (_, err_bad), (_, err_good) = (p.communicate(timeout=120) for p in procs)
    assert procs[0].returncode == 2 and procs[1].returncode == 0, err_good
    assert os.listdir(out) == ["good.csv"]
