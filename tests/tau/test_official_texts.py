"""Two tool-output texts that differed from the official tau2-bench v1.0.1 (found by the differential
oracle, docs/tau-fidelity.md): argument errors of the shared tools name the domain's toolkit class,
and `book_reservation` with passengers that are not objects gives the Reservation model's
validation error, as upstream."""

import pytest

from benchmarks.tau.domains import toolkit_for
from tests.tau.helpers import domain


@pytest.mark.parametrize(("name", "cls"), [("airline", "AirlineTools"), ("retail", "RetailTools")])
def test_argument_errors_of_the_shared_tools_name_the_domains_class(name, cls):
    tools = toolkit_for(name)(domain(name).fresh_db())
    assert tools.execute("calculate", {}) == (
        f"Error: {cls}.calculate() missing 1 required positional argument: 'expression'",
        True,
    )
    assert tools.execute("transfer_to_human_agents", {"summary": "s", "urgency": 1}) == (
        f"Error: {cls}.transfer_to_human_agents() got an unexpected keyword argument 'urgency'",
        True,
    )
    # an error raised inside a tool keeps its own text
    assert tools.execute("calculate", {"expression": "1 / 0"})[1] is True


def test_passengers_that_are_not_objects_fail_the_reservation_model():
    tools = toolkit_for("airline")(domain("airline").fresh_db())
    user = next(iter(tools.db["users"]))
    booking = dict(
        user_id=user,
        origin="JFK",
        destination="SEA",
        flight_type="one_way",
        cabin="economy",
        flights=[],
        passengers=["John Doe"],
        payment_methods=[],
        total_baggages=0,
        nonfree_baggages=0,
        insurance="no",
    )
    before = tools.db["reservations"].copy()
    content, error = tools.execute("book_reservation", booking)
    assert error and content.startswith(
        "Error: 1 validation error for Reservation\npassengers.0\n  Input should be a valid dictionary or instance "
        "of Passenger [type=model_type, input_value='John Doe', input_type=str]"
    )
    # two problems are listed in the model's field order, as upstream's Reservation lists them
    content, _ = tools.execute("book_reservation", {**booking, "cabin": "first"})
    assert content.startswith("Error: 2 validation errors for Reservation\ncabin\n")
    assert "\npassengers.0\n" in content
    # flights given as strings reach the flight loop as they are
    content, _ = tools.execute("book_reservation", {**booking, "passengers": [], "flights": ["HAT001"]})
    assert content == "Error: 'str' object has no attribute 'flight_number'"
    assert tools.db["reservations"] == before  # nothing was booked
