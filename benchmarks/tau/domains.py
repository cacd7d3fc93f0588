"""Domain name → toolkit class."""

from __future__ import annotations

from benchmarks.tau.toolkit import Toolkit


def toolkit_for(domain: str) -> type[Toolkit]:
    if domain == "airline":
        from benchmarks.tau.airline import AirlineTools

        return AirlineTools
    if domain == "retail":
        from benchmarks.tau.retail import RetailTools

        return RetailTools
    raise ValueError(f"unknown τ³ domain '{domain}'; available: airline, retail")
