"""Giving back the memory a large run took (SPEC §10: a first index of a million notes within a
laptop's memory).

Owns: handing the C heap's freed memory back to the system, and making a run's few surviving
Python objects again once its many transient ones are gone. Python keeps a block of its small
objects' memory for as long as one object in it lives: the paths a run reports, or a plan drawn
from a million notes, are made among the run's transient objects and would keep most of the
memory those took, hundreds of MB at a million notes, from being given back. Does not own when
a run calls them (indexing.py, selfcal.py).
"""

from __future__ import annotations

import contextlib
import pickle
from typing import TypeVar

T = TypeVar("T")


def give_back() -> None:
    """Hand the heap a large run freed back to the system (glibc keeps it otherwise): the
    calibration or the searches that follow in the same process would stack on it. The run's
    objects that only a reference cycle still holds are freed first (a plan drawn from a
    million notes leaves a hundred MB so). A no-op where the C library has no `malloc_trim`."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def remade(objects: T) -> T:
    """`objects` made again from their bytes (picklable values only): the copy's objects are
    made together, and the originals, once let go, no longer keep the memory around them."""
    made: T = pickle.loads(pickle.dumps(objects, protocol=pickle.HIGHEST_PROTOCOL))
    return made
