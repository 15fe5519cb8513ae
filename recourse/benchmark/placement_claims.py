"""The placement claims a registration file fixes before a run: each names a row, a statistic and
the family it is placed in (its matched-noise family or the retrained seeds;
:mod:`recourse.benchmark.placed_rows`), read by Holm over exactly the registered claims at the
file's α. The run records them in its settings, so that ``recourse recompute-claims`` needs
nothing else."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

PLACED_METRICS = ("newly_seen", "dirsim", "crg")
AGAINST = ("noise", "seeds")


@dataclass(frozen=True)
class PlacementClaim:
    """One registered claim: ``row``'s ``metric`` lies outside its family ``against`` (noise or seeds)."""

    row: str
    metric: str
    against: str

    def __post_init__(self) -> None:
        if self.metric not in PLACED_METRICS or self.against not in AGAINST or not self.row:
            raise ValueError(f"a placement claim needs a row, a metric of {', '.join(PLACED_METRICS)} and a family "
                             f"of {', '.join(AGAINST)}; got {self}")


@dataclass(frozen=True)
class RegisteredPlacements:
    """The placement claims a registration file fixed before the run, with its α and SHA-256."""

    source: str = field(compare=False)
    claims: tuple[PlacementClaim, ...]
    alpha: float = 0.05
    sha256: str = ""

    def __post_init__(self) -> None:
        if not self.claims or len(set(self.claims)) != len(self.claims):
            raise ValueError(f"{self.source}: a registered family needs distinct claims, at least one")
        if not 0 < self.alpha < 1:
            raise ValueError(f"{self.source}: alpha {self.alpha} is out of range")

    @classmethod
    def from_file(cls, path: Path | str) -> "RegisteredPlacements":
        try:
            text = Path(path).read_bytes()
            record = json.loads(text)
            found = tuple(PlacementClaim(c["row"], c["metric"], c["against"]) for c in record["claims"])
            return cls(str(path), found, float(record.get("alpha", 0.05)), hashlib.sha256(text).hexdigest())
        except (OSError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: not a registered placement family ({type(error).__name__}: {error})") from None

    @classmethod
    def from_dict(cls, record: dict) -> "RegisteredPlacements":
        return cls(record["source"], tuple(PlacementClaim(**c) for c in record["claims"]), float(record["alpha"]),
                   record.get("sha256", ""))

    def to_dict(self) -> dict:
        return asdict(self)
