"""nexus.shares: a function over many items in a forked process per CPU, its results in their order."""

import os
import threading

from nexus import shares


def test_the_work_is_shared_between_processes_and_comes_back_in_order():
    found = shares.mapped(lambda n: (n * n, os.getpid()), range(40), least=10)
    assert [square for square, _ in found] == [n * n for n in range(40)]
    if (os.cpu_count() or 1) > 1 and threading.active_count() == 1:
        assert len({pid for _, pid in found}) == min(os.cpu_count(), 4)


def test_a_share_whose_process_fails_is_done_here():
    here = os.getpid()
    assert shares.mapped(lambda n: n if os.getpid() == here else 1 / 0, range(40), least=10) == list(range(40))


def test_few_items_are_done_here():
    assert {pid for pid in shares.mapped(lambda n: os.getpid(), range(9), least=10)} == {os.getpid()}
