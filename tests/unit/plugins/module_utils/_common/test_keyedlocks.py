"""KeyedLocks: one lock per key, the same one for every caller of that key."""

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks


def test_a_key_has_one_lock_and_keys_do_not_share_one():
    locks = KeyedLocks()
    assert locks("a") is locks("a")
    assert locks("a") is not locks("b")


def test_threads_asking_at_once_get_the_same_lock():
    locks = KeyedLocks()
    start = threading.Barrier(8)
    got = []

    def ask():
        start.wait()
        got.append(locks("ns"))

    threads = [threading.Thread(target=ask) for _index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and all(lock is got[0] for lock in got)


def test_a_held_key_does_not_hold_another():
    locks = KeyedLocks()
    with locks("a"):
        assert locks("b").acquire(blocking=False)
        assert not locks("a").acquire(blocking=False)
