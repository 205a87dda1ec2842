"""Float64 references: one function per op, named by the op's `reference` key. Each takes the inputs
(float64 or integer NumPy arrays, by param name), the dims and the scalars, and returns the expected
outputs by param name (float64)."""
from __future__ import annotations

import numpy as np


def add(a, b, **_):
    return {"out": a.astype(np.float64) + b.astype(np.float64)}


REFERENCES = {"add": add}
