"""The base of every site-config model: frozen, unknown keys refused, no inf / nan."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    # inf / nan are never a setting (`band_top: .inf` would switch the band off).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

