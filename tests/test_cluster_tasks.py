"""The settings every Dask task of the cluster engine runs under (``changerate_bayes.crawllog._dask_tasks``)."""

import os
import subprocess
import sys
import textwrap

import pytest


def test_a_task_runs_numba_and_pyarrow_on_one_thread_and_restores_them():
    import numba
    import pyarrow as pa

    from changerate_bayes.crawllog._dask_tasks import task_settings

    threads, cpus = numba.get_num_threads(), pa.cpu_count()
    with task_settings():
        assert (numba.get_num_threads(), pa.cpu_count()) == (1, 1)
        with task_settings():  # a second task running at the same time
            assert pa.cpu_count() == 1
        assert (numba.get_num_threads(), pa.cpu_count()) == (1, 1)  # the first task still runs
    assert (numba.get_num_threads(), pa.cpu_count()) == (threads, cpus)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_large_arrays_are_not_mapped_anew_under_the_nannys_malloc_setting():
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which fixes glibc's mmap
    # threshold at 128 KiB: each 16 MiB array is then mmapped and its 4,096 pages faulted in anew.
    # Inside a task (arrays up to 32 MiB kept in the heap) allocating the same array again faults
    # no page. The arrays are larger than the free chunks that imports may leave in the heap
    # (malloc serves a smaller array from such a chunk without mmap, and nothing faults).
    code = textwrap.dedent("""
        import resource
        import numpy as np
        from changerate_bayes.crawllog._dask_tasks import task_settings

        def faults():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(40):
                a = np.ones(2**21)  # 16 MiB, written, so every page is touched
                del a
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

        outside = faults()
        with task_settings():
            faults()  # the heap grows once
            inside = faults()
        print(outside, inside)
    """)
    # the child's malloc is set by this variable alone: nothing malloc-related inherited from the
    # test process (whatever an earlier test or the shell left there) may raise its mmap threshold
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    env["MALLOC_TRIM_THRESHOLD_"] = "65536"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    outside, inside = map(int, out.split())
    assert outside >= 100  # each array faulted in anew (4,096 faults with 4 KiB pages, 9 with 2 MiB huge pages)
    assert inside <= outside // 20


def test_inside_a_task_parquet_batches_are_read_in_the_tasks_thread():
    import threading

    import pyarrow as pa

    from changerate_bayes.crawllog._dask_tasks import task_settings
    from changerate_bayes.io._tabular import read_ahead

    def batches(threads):
        for i in range(3):
            threads.add(threading.current_thread().name)
            yield i

    outside, inside = set(), set()
    cpus = pa.cpu_count()
    pa.set_cpu_count(2)  # as on a machine of 2 cores or more
    try:
        assert list(read_ahead(batches(outside))) == [0, 1, 2]
        with task_settings():
            assert list(read_ahead(batches(inside))) == [0, 1, 2]
    finally:
        pa.set_cpu_count(cpus)
    assert inside == {threading.current_thread().name}
    assert threading.current_thread().name not in outside  # a second thread reads ahead
