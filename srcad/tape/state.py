"""state: which tapes are recording in this thread, and fresh tensor ids.

Every recording tape of the current thread is on `RECORDING.tapes`, innermost last; an
operation on tensors is recorded on each of them that tracks one of its inputs. Thread-local,
as TensorFlow's tape stack is, so two threads with their own tapes do not record into each
other. Ids are never reused: a tensor written in place gets a new id (a new version), so a
node keeps naming the exact value it read.
"""
import itertools
import threading


class _Recording(threading.local):
    def __init__(self):
        self.tapes = []


RECORDING = _Recording()
new_id = itertools.count(1).__next__
