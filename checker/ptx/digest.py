"""The identity of a PTX: the sha256 of its bytes, which every proof, store row, lock entry and load names."""
from __future__ import annotations

import hashlib


def ptx_digest(ptx: str | bytes) -> str:
    return hashlib.sha256(ptx if isinstance(ptx, (bytes, bytearray)) else ptx.encode()).hexdigest()
