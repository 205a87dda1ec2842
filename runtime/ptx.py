"""The PTX text as kreg sees it: its sha256, its parse (cached), and arguments typed as its params are."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.digest import ptx_digest
from kreg.checker.ptx.bind import PARAM_NP   # PTX param type -> NumPy scalar type that passes it by value

from .errors import ArgError


def text(ptx: str | bytes) -> str:
    return ptx.decode() if isinstance(ptx, (bytes, bytearray)) else ptx


sha256 = ptx_digest      # the sha256 of the PTX bytes (UTF-8): what a proof names (runtime.sha256)


@lru_cache(maxsize=256)
def parsed(ptx: str) -> P.Module:
    """The parsed module (one parse per PTX text in this process)."""
    return P.parse(ptx)


def typed(entry: str, params: list[P.Param], args: tuple) -> tuple:
    """One NumPy scalar per param: a buffer (anything with .ptr) as its u64 address, a NumPy scalar of
    the param's size as is (reinterpreted when only signedness differs), a Python int or float
    converted when it fits."""
    if len(args) != len(params):
        raise ArgError(f"{entry} takes {len(params)} params ({', '.join(p.name for p in params)}) "
                       f"but {len(args)} args were given")
    return tuple(_one(entry, p, a) for p, a in zip(params, args))


def _one(entry: str, p: P.Param, a):
    want = PARAM_NP.get(p.type)
    if want is None or np.dtype(want).itemsize != p.size:
        raise ArgError(f"{entry}: param {p.name} of type .{p.type} ({p.size} bytes) cannot be passed")
    if type(a) is want:
        return a
    if hasattr(a, "ptr"):
        if p.size != 8:
            raise ArgError(f"{entry}: a buffer is passed for {p.name}, which is .{p.type}, not a 64-bit pointer")
        return np.uint64(a.ptr)
    wkind = np.dtype(want).kind
    if isinstance(a, np.generic):
        if a.dtype.itemsize == p.size and (a.dtype.kind == "f") == (wkind == "f") and a.dtype.kind in "iuf":
            return a.view(want)
        if a.dtype.kind in "iu" and wkind in "iu":
            a = int(a)
        else:
            raise ArgError(f"{entry}: {a.dtype} argument for {p.name}, which is .{p.type}")
    if isinstance(a, (bool, int)) and wkind in "iu":
        info = np.iinfo(want)
        if not info.min <= a <= info.max:
            raise ArgError(f"{entry}: {a} does not fit {p.name} (.{p.type})")
        return want(a)
    if isinstance(a, (int, float)) and wkind == "f":
        return want(a)
    raise ArgError(f"{entry}: cannot pass {type(a).__name__} {a!r} for {p.name} (.{p.type})")
