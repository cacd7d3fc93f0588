"""Airline record shapes: pydantic models for the objects upstream *constructs* (so values are
coerced and validated as there), and model-ordered views of stored records for tool output
(docs/tau-bench.md §4, §5; upstream `src/tau2/domains/airline/data_model.py`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from benchmarks.tau.toolkit import identity_view, methods_view, pick

AIRPORTS = [
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
]
NOW = "2024-05-15T15:00:00"  # the policy's "now" (2024-05-15 15:00 EST)
BOOKING_IDS = ("HATHAT", "HATHAU", "HATHAV")
CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")


# --- constructed objects (validated/coerced like upstream pydantic models; class names appear in errors)
class FlightInfo(BaseModel):
    flight_number: str
    date: str


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class Payment(BaseModel):
    payment_id: str
    amount: int


class Reservation(BaseModel):
    """A new reservation as upstream constructs it, before its flights are added: the fields in upstream's
    order, so that a validation error lists its problems as upstream's does (passengers or payments that
    were not all objects reach this model as they were passed, as upstream)."""

    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: Literal["round_trip", "one_way"]
    cabin: Literal["business", "economy", "basic_economy"]
    flights: list[dict[str, Any]]  # empty here: segments are priced and appended after
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Literal["yes", "no"]


def build(model: type[BaseModel], value: Any) -> dict[str, Any]:
    """Construct a model from a dict argument (extra keys ignored) and return its plain dict."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        raise TypeError(f"{model.__name__}() argument after ** must be a mapping, not {type(value).__name__}")
    return model(**value).model_dump()


# --- output views (field order = upstream model order)
PASSENGER = ("first_name", "last_name", "dob")
SEGMENT = ("flight_number", "origin", "destination", "date", "price")
PAYMENT = ("payment_id", "amount")
METHOD = {
    "credit_card": ("source", "id", "brand", "last_four"),
    "gift_card": ("source", "id", "amount"),
    "certificate": ("source", "id", "amount"),
}
STATUS_FIELDS = {
    "available": ("status", "available_seats", "prices"),
    "landed": ("status", "actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": ("status",),
    "delayed": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("status", "actual_departure_time_est", "estimated_arrival_time_est"),
}


def reservation_view(r: dict[str, Any]) -> dict[str, Any]:
    out = pick(r, ("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin"))
    out["flights"] = [pick(f, SEGMENT) for f in r["flights"]]
    out["passengers"] = [pick(p, PASSENGER) for p in r["passengers"]]
    out["payment_history"] = [pick(p, PAYMENT) for p in r["payment_history"]]
    out.update(pick(r, ("created_at", "total_baggages", "nonfree_baggages", "insurance", "status")))
    return out


def user_view(u: dict[str, Any]) -> dict[str, Any]:
    return {
        **identity_view(u),
        "dob": u["dob"],
        "payment_methods": methods_view(u, METHOD),
        "saved_passengers": [pick(p, PASSENGER) for p in u["saved_passengers"]],
        "membership": u["membership"],
        "reservations": list(u["reservations"]),
    }


def direct_flight(flight: dict[str, Any], record: dict[str, Any], date: str | None) -> dict[str, Any]:
    """Search result (`DirectFlight`): schedule plus that date's seats and prices."""
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "status": "available",
        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
        "date": date,
        "available_seats": record["available_seats"],
        "prices": record["prices"],
    }
