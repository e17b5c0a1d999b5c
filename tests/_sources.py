"""Array-likes for tests of copies that fail part-way."""

import numpy as np


class BreaksLater:
    """1000 int32 ones whose second region read fails (the source went away)."""

    shape, dtype = (1000,), np.dtype("i4")

    def __init__(self):
        self.reads = 0

    def __getitem__(self, region):
        self.reads += 1
        if self.reads > 1:
            raise OSError("source went away")
        return np.ones(1000, "i4")[region]
