"""Airline tools (docs/tau-bench.md §5; upstream `src/tau2/domains/airline/tools.py`): names,
signatures, checks, error texts (read at run time from upstream, benchmarks/tau/errors.py), DB mutations and quirks
as upstream (no refund on cancel, certificate removal, cabin-change repricing, `+1` arrival dates,
assignment without coercion)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from benchmarks.tau.errors import error
from benchmarks.tau import airline_models
from benchmarks.tau.toolkit import INT, STR, Toolkit, s, tool

CABIN = s("The cabin class.", enum=["business", "economy", "basic_economy"])
FLIGHTS = s(
    "Flight segments, each with flight_number (e.g. 'HAT001') and date (YYYY-MM-DD).",
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"flight_number": STR, "date": STR},
            "required": ["flight_number", "date"],
        },
    },
)
PASSENGERS = s(
    "Passengers, each with first_name, last_name and dob (YYYY-MM-DD).",
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"first_name": STR, "last_name": STR, "dob": STR},
            "required": ["first_name", "last_name", "dob"],
        },
    },
)
RES_ID = s("Reservation code (six characters, e.g. '8JX2WO').")
USER_ID = s("Customer account id (e.g. 'sara_doe_496').")
DATE = s("Calendar date written YYYY-MM-DD (e.g. '2024-05-01').")
_FLOAT = TypeAdapter(float)  # Certificate(amount: float) coercion
IATA = s("Three-letter IATA code of the airport (e.g. 'JFK').")


def _all_built(model: type[Any], items: list) -> list:
    """Upstream's `if all(isinstance(x, dict) for x in items): items = [Model(**x) for x in items]`:
    each item built (as a plain dict) when every one is a dict, else the items as passed."""
    if all(isinstance(x, dict) for x in items):
        return [airline_models.build(model, x) for x in items]
    return list(items)


def E(method: str, n: int, fallback: str, **fields: Any) -> str:
    """Upstream's error text (benchmarks/tau/errors.py), our `fallback` offline."""
    return error("airline", method, n, fallback, **fields)


class AirlineTools(Toolkit):
    DOMAIN = "airline"
    ORDER = (
        "book_reservation",
        "calculate",
        "cancel_reservation",
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "send_certificate",
        "transfer_to_human_agents",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "get_flight_status",
    )
    # Harness hint (not upstream), off by default (`benchmark.params.tool_hints: true`).
    HINTS = {"book_reservation": ("payment_methods", " The amounts must add up to the total price.")}

    # -- lookups
    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.db["users"]:
            raise ValueError(E("_get_user", 0, "No user {user_id}", user_id=user_id))
        return self.db["users"][user_id]

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        if reservation_id not in self.db["reservations"]:
            raise ValueError(E("_get_reservation", 0, "No reservation {reservation_id}", reservation_id=reservation_id))
        return self.db["reservations"][reservation_id]

    def _flight(self, flight_number: str) -> dict[str, Any]:
        if flight_number not in self.db["flights"]:
            raise ValueError(E("_get_flight", 0, "No flight {flight_number}", flight_number=flight_number))
        return self.db["flights"][flight_number]

    def _flight_date(self, flight_number: str, date: str) -> dict[str, Any]:
        flight = self._flight(flight_number)
        if date not in flight["dates"]:
            raise ValueError(
                E(
                    "_get_flight_instance",
                    0,
                    "Flight {flight_number} does not fly on {date}",
                    flight_number=flight_number,
                    date=date,
                )
            )
        return flight["dates"][date]

    def _available_on(self, origin: str, date: str, destination: str | None = None) -> list[tuple[dict, dict]]:
        out = []
        for flight in self.db["flights"].values():
            if flight["origin"] != origin or (destination is not None and flight["destination"] != destination):
                continue
            rec = flight["dates"].get(date)
            if rec is not None and rec["status"] == "available":
                out.append((flight, rec))
        return out

    def _new_segment(self, number: str, date: str, cabin: str, n: int) -> dict[str, Any]:
        """A reservation segment at today's price, after the availability and seat checks."""
        flight = self._flight(number)
        rec = self._flight_date(number, date)
        if rec["status"] != "available":
            raise ValueError(
                E(
                    "book_reservation",
                    0,
                    "Flight {flight_number} cannot be booked on {flight_info.date}",
                    **{"flight_number": number, "flight_info.date": date},
                )
            )
        if rec["available_seats"][cabin] < n:
            raise ValueError(
                E("book_reservation", 1, "Flight {flight_number} has too few free seats", flight_number=number)
            )
        return {
            "flight_number": number,
            "origin": flight["origin"],
            "destination": flight["destination"],
            "date": date,
            "price": rec["prices"][cabin],
        }

    def _pay_for_update(self, user: dict[str, Any], reservation: dict[str, Any], payment_id: str, price: Any) -> None:
        """Payment rule P (`_payment_for_update`), checked even when the price is 0."""
        if payment_id not in user["payment_methods"]:
            raise ValueError(E("_payment_for_update", 0, "The user has no such payment method"))
        method = user["payment_methods"][payment_id]
        if method["source"] == "certificate":
            raise ValueError(E("_payment_for_update", 1, "A certificate cannot pay for a reservation change"))
        if method["source"] == "gift_card" and method["amount"] < price:
            raise ValueError(E("_payment_for_update", 2, "The gift card balance is too low"))
        if method["source"] == "gift_card":
            method["amount"] = method["amount"] - price
        if price != 0:
            reservation["payment_history"].append(
                airline_models.build(airline_models.Payment, {"payment_id": payment_id, "amount": price})
            )

    # -- READ
    @tool(
        "READ",
        "Look up a customer profile: contact data, payment methods, saved passengers, membership and reservation "
        "codes.",
        user_id=USER_ID,
    )
    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return airline_models.user_view(self._user(user_id))

    @tool(
        "READ",
        "Look up one reservation: its flights, passengers, payments, cabin, baggage and insurance.",
        reservation_id=RES_ID,
    )
    def get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        return airline_models.reservation_view(self._reservation(reservation_id))

    @tool("READ", "List every airport the airline serves with its city.")
    def list_all_airports(self) -> list[dict[str, str]]:
        return [{"iata": code, "city": city} for code, city in airline_models.AIRPORTS]

    @tool(
        "READ",
        "Find nonstop flights from one airport to another on a given day.",
        origin=IATA,
        destination=IATA,
        date=DATE,
    )
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return [airline_models.direct_flight(f, rec, None) for f, rec in self._available_on(origin, date, destination)]

    @tool(
        "READ",
        "Find connecting itineraries with exactly one stop between two airports on a given day.",
        origin=IATA,
        destination=IATA,
        date=DATE,
    )
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
        out = []
        for leg1, rec1 in self._available_on(origin, date):
            arrival = leg1["scheduled_arrival_time_est"]
            # Upstream quirk: next day = day number + 1, no zero padding, no month rollover.
            date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in arrival else date
            for leg2, rec2 in self._available_on(leg1["destination"], date2, destination):
                if leg2["scheduled_departure_time_est"] >= arrival:  # plain string comparison
                    out.append(
                        [
                            airline_models.direct_flight(leg1, rec1, date),
                            airline_models.direct_flight(leg2, rec2, date2),
                        ]
                    )
        return out

    @tool(
        "READ",
        "Tell the status (available, delayed, landed, ...) of one flight on a given day.",
        flight_number=s("Flight code (e.g. 'HAT001')."),
        date=DATE,
    )
    def get_flight_status(self, flight_number: str, date: str) -> str:
        return self._flight_date(flight_number, date)["status"]

    # -- WRITE
    @tool(
        "WRITE",
        "Create a new reservation for the customer.",
        user_id=USER_ID,
        origin=IATA,
        destination=IATA,
        flight_type=s("The type of trip.", enum=["round_trip", "one_way"]),
        cabin=CABIN,
        flights=FLIGHTS,
        passengers=PASSENGERS,
        payment_methods=s(
            "Payment methods and the amount charged to each.",
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"payment_id": STR, "amount": INT},
                    "required": ["payment_id", "amount"],
                },
            },
        ),
        total_baggages=s("Count of all checked bags.", INT),
        nonfree_baggages=s("Count of the checked bags that are paid for.", INT),
        insurance=s("Whether travel insurance is purchased.", enum=["yes", "no"]),
    )
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: str,
        cabin: str,
        flights: list,
        passengers: list,
        payment_methods: list,
        total_baggages: int,
        nonfree_baggages: int,
        insurance: str,
    ) -> dict[str, Any]:
        # upstream converts each list only when all its items are objects; otherwise the items stay as
        # passed and the Reservation model (passengers, payments) or the flight loop refuses them
        flight_infos = _all_built(airline_models.FlightInfo, flights)
        pax = _all_built(airline_models.Passenger, passengers)
        payments = _all_built(airline_models.Payment, payment_methods)
        user = self._user(user_id)
        rid = next((r for r in airline_models.BOOKING_IDS if r not in self.db["reservations"]), None)
        if rid is None:
            raise ValueError(E("_get_new_reservation_id", 0, "No reservation id is left"))
        res = airline_models.build(
            airline_models.Reservation,
            dict(
                reservation_id=rid,
                user_id=user_id,
                origin=origin,
                destination=destination,
                flight_type=flight_type,
                cabin=cabin,
                flights=[],
                passengers=pax,
                payment_history=payments,
                created_at=airline_models.NOW,
                total_baggages=total_baggages,
                nonfree_baggages=nonfree_baggages,
                insurance=insurance,
            ),
        )
        pax, payments = res["passengers"], res["payment_history"]
        cabin, n = res["cabin"], len(pax)
        total = 0
        for info in flight_infos:
            if not isinstance(info, dict):  # upstream reads `flight_info.flight_number` of the item as passed
                raise AttributeError(f"'{type(info).__name__}' object has no attribute 'flight_number'")
            seg = self._new_segment(info["flight_number"], info["date"], cabin, n)
            res["flights"].append(seg)
            total += seg["price"] * n
        if insurance == "yes":
            total += 30 * n
        total += 50 * nonfree_baggages  # the argument as passed (upstream), not the coerced field
        for p in payments:
            if p["payment_id"] not in user["payment_methods"]:
                raise ValueError(
                    E("book_reservation", 2, "The user has no payment method {payment_id}", payment_id=p["payment_id"])
                )
            method = user["payment_methods"][p["payment_id"]]
            if method["source"] in ("gift_card", "certificate") and method["amount"] < p["amount"]:
                raise ValueError(
                    E(
                        "book_reservation",
                        3,
                        "Payment method {payment_id} has too little balance",
                        payment_id=p["payment_id"],
                    )
                )
        paid = sum(p["amount"] for p in payments)
        if paid != total:
            raise ValueError(
                E(
                    "book_reservation",
                    4,
                    "The payments sum to {total_payment}, not the total price {total_price}",
                    total_price=total,
                    total_payment=paid,
                )
            )
        for p in payments:  # a certificate listed twice raises KeyError here, after earlier deductions
            method = user["payment_methods"][p["payment_id"]]
            if method["source"] == "gift_card":
                method["amount"] -= p["amount"]
            elif method["source"] == "certificate":
                del user["payment_methods"][p["payment_id"]]
        for seg in res["flights"]:
            self.db["flights"][seg["flight_number"]]["dates"][seg["date"]]["available_seats"][cabin] -= n
        self.db["reservations"][rid] = res
        user["reservations"].append(rid)
        return airline_models.reservation_view(res)

    @tool("WRITE", "Cancel a reservation with all of its flights.", reservation_id=RES_ID)
    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        # Upstream: refund entries only; no balance refund, no seat release, no already-cancelled check.
        refunds = [
            airline_models.build(airline_models.Payment, {"payment_id": p["payment_id"], "amount": -p["amount"]})
            for p in res["payment_history"]
        ]
        res["payment_history"].extend(refunds)
        res["status"] = "cancelled"
        return airline_models.reservation_view(res)

    @tool(
        "WRITE",
        "Change how many checked bags a reservation has.",
        reservation_id=RES_ID,
        total_baggages=s("New count of all checked bags on the reservation.", INT),
        nonfree_baggages=s("New count of the checked bags that are paid for.", INT),
        payment_id=s(
            "The payment id stored in the user profile, such as 'credit_card_7815826' or 'gift_card_7815826'."
        ),
    )
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> dict[str, Any]:
        res = self._reservation(reservation_id)
        user = self._user(res["user_id"])
        price = 50 * max(0, nonfree_baggages - res["nonfree_baggages"])
        self._pay_for_update(user, res, payment_id, price)
        res["total_baggages"] = total_baggages  # assigned as passed (no coercion)
        res["nonfree_baggages"] = nonfree_baggages
        return airline_models.reservation_view(res)

    @tool(
        "WRITE",
        "Replace the flights (and possibly the cabin) of a reservation.",
        reservation_id=RES_ID,
        cabin=CABIN,
        flights=s(
            "The entire new itinerary: every flight segment of the reservation, including unchanged ones.", FLIGHTS
        ),
        payment_id=s(
            "The payment id stored in the user profile, such as 'credit_card_7815826' or 'gift_card_7815826'."
        ),
    )
    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list, payment_id: str
    ) -> dict[str, Any]:
        infos = [airline_models.build(airline_models.FlightInfo, f) for f in flights]
        res = self._reservation(reservation_id)
        user = self._user(res["user_id"])
        n = len(res["passengers"])
        total, new_flights = 0, []
        for info in infos:
            number, date = info["flight_number"], info["date"]
            kept = next(
                (
                    f
                    for f in res["flights"]
                    if f["flight_number"] == number and f["date"] == date and cabin == res["cabin"]
                ),
                None,
            )
            if kept is not None:  # same segment, same cabin: keep it at its old price
                total += kept["price"] * n
                new_flights.append(kept)
                continue
            seg = self._new_segment(number, date, cabin, n)
            total += seg["price"] * n
            new_flights.append(seg)
        total -= sum(f["price"] for f in res["flights"]) * n
        self._pay_for_update(user, res, payment_id, total)
        res["flights"] = new_flights  # seat inventory is never changed
        res["cabin"] = cabin
        return airline_models.reservation_view(res)

    @tool(
        "WRITE",
        "Replace the passenger details of a reservation.",
        reservation_id=RES_ID,
        passengers=s("The full updated list of passengers, in the same number as before.", PASSENGERS),
    )
    def update_reservation_passengers(self, reservation_id: str, passengers: list) -> dict[str, Any]:
        pax = [airline_models.build(airline_models.Passenger, p) for p in passengers]
        res = self._reservation(reservation_id)
        if len(pax) != len(res["passengers"]):
            raise ValueError(E("update_reservation_passengers", 0, "The passenger count must stay the same"))
        res["passengers"] = pax
        return airline_models.reservation_view(res)

    @tool(
        "WRITE",
        "Issue a travel certificate (a voucher) to a customer; use with care.",
        user_id=s("Account id of the customer who receives the voucher (e.g. 'sara_doe_496')."),
        amount=s("Voucher value in dollars.", INT),
    )
    def send_certificate(self, user_id: str, amount: int) -> str:
        user = self._user(user_id)
        cid = next((c for c in airline_models.CERTIFICATE_IDS if c not in user["payment_methods"]), None)
        if cid is None:
            raise ValueError(E("send_certificate", 0, "No certificate id is left"))
        user["payment_methods"][cid] = {"source": "certificate", "id": cid, "amount": _FLOAT.validate_python(amount)}
        return f"Certificate {cid} added to user {user_id} with amount {amount}."
