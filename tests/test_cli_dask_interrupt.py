"""Ctrl-C during ``--engine dask``: one line and status 130, no traceback of the local cluster's workers."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import psutil
import pytest
from _helpers import AT_A_TERMINAL


def _logs(folder, n_files=8, pages=2000, visits=50):
    gen = np.random.default_rng(0)
    t0 = pd.Timestamp("2024-01-01T00:00:00Z")
    paths = []
    for f in range(n_files):
        page = np.repeat([f"https://p{f}-{i}.example/" for i in range(pages)], visits)
        t = t0 + pd.to_timedelta(np.tile(np.arange(visits) * 6, pages), unit="h")
        path = folder / f"log{f}.csv"
        pd.DataFrame(
            {"page": page, "fetch_time": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "changed": gen.integers(0, 2, page.size)}
        ).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def _ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT now (the SigIgn mask of /proc/PID/status)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            mask = next(line for line in status if line.startswith("SigIgn:")).split()[1]
    except (OSError, StopIteration):  # the process has ended
        return False
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


@pytest.mark.slow
def test_ctrl_c_on_dask_prints_no_worker_traceback(tmp_path):
    logs = _logs(tmp_path)
    out = tmp_path / "new" / "e.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-c", AT_A_TERMINAL, "estimate", *logs, "--engine", "dask", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        parent = psutil.Process(proc.pid)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:  # the cluster's worker processes are up
            if len([c for c in parent.children(recursive=True) if "python" in c.name().lower()]) >= 3:
                break
            time.sleep(0.1)
        # the command ignores SIGINT while it starts the cluster (so that the workers inherit
        # SIG_IGN): press Ctrl-C once it handles SIGINT again, as its /proc status tells
        while time.monotonic() < deadline and proc.poll() is None and _ignores_sigint(proc.pid):
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None, "the run ended before the interrupt: make the log larger"
        # Ctrl-C at a terminal reaches the whole process group: the command and its workers
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # pressed while the cluster was still starting: press again
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == "changerate-bayes: interrupted; no partial output is left"
    assert not out.parent.exists()
