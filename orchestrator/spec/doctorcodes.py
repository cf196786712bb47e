"""The codes of orch doctor's catalog, for what validates them below the doctor (cluster.yaml's
``doctor.ignore``, ``--ignore``). The catalog (``orchestrator.doctor.catalog``) owns each code's meaning
and checks at import that it defines exactly these."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.errors import ConfigError

DOCTOR_CODES: tuple[str, ...] = tuple(f"DDP{n:03d}" for n in range(1, 25))


def parse_codes(values: Iterable[str], where: str) -> tuple[str, ...]:
    """``["DDP001,ddp005", "DDP011"]`` -> ``("DDP001", "DDP005", "DDP011")``; an unknown code is a
    ConfigError naming it and the known ones."""
    codes: list[str] = []
    for value in values:
        for part in str(value).split(","):
            code = part.strip().upper()
            if not code:
                continue
            if code not in DOCTOR_CODES:
                raise ConfigError(f"{where}: unknown orch doctor code {part.strip()!r}",
                                  hint=f"use codes of the catalog ({DOCTOR_CODES[0]}..{DOCTOR_CODES[-1]}, "
                                       "docs/doctor.md), e.g. --ignore DDP001,DDP005")
            if code not in codes:
                codes.append(code)
    return tuple(codes)
