"""The kind of device a result belongs to, parsed once: `cpu (kreg PTX emulator V)` or `gpu (NAME, driver N)`.
str() gives exactly the text the store keys rows by (and lock files name), so stored results stay valid."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceKind:
    device: str                  # "cpu" | "gpu" ("" for no device: a proof's row)
    rest: str = ""               # the rest as written: "(kreg PTX emulator V)", "(NAME, driver N)"

    @classmethod
    def parse(cls, text: str | DeviceKind) -> DeviceKind:
        """The kind a stored string names; any text parses (the device is its first word), and str() gives
        the text back exactly."""
        if isinstance(text, DeviceKind):
            return text
        device, _, rest = str(text).partition(" ")
        return cls(device, rest)

    @classmethod
    def cpu(cls, emulator_version: str) -> DeviceKind:
        return cls("cpu", f"(kreg PTX emulator {emulator_version})")

    @classmethod
    def gpu(cls, name: str, driver: int | str) -> DeviceKind:
        return cls("gpu", f"({name}, driver {driver})")

    @property
    def detail(self) -> str:
        """What the parentheses hold: the emulator's version, or the GPU and its driver."""
        return self.rest[1:-1] if self.rest.startswith("(") and self.rest.endswith(")") else self.rest

    def __str__(self) -> str:
        return f"{self.device} {self.rest}" if self.rest else self.device

    def serves(self, device: str) -> bool:
        """Whether results of this kind count for `--device device` (cpu / gpu)."""
        return self.device == device
