"""Python's cyclic garbage collector, set up for a long-running process.

`tidelog dev` holds some 400,000 objects once started (moto's backends, botocore's service
models, the handlers and their libraries), and every full collection walked them all: about
190 ms a time, triggered every ten or so JSON produce requests of 1,000 records (each request
allocates a few thousand objects that live briefly). That was a third of such a request's time
on the embedded stack. What exists at the end of start-up lives as long as the process, so it
is moved out of the collector's sight (``gc.freeze``); what is allocated later is collected
as before. `tidelog agent`, long-running too, does the same.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect once, then exempt every object still alive from later collections; how many
    were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
