"""Travel tools (docs/memoryarena.md §3.2) on the shared TravelPlanner database and on our own fixtures."""

import pytest

from benchmarks.memoryarena.loader import FIXTURES
from benchmarks.memoryarena.travel_tools import TOOL_NAMES, TravelDB
from tests.conftest import shared_path

FLIGHTS = FIXTURES / "flights" / "clean_Flights_2022.csv"


@pytest.fixture
def db():
    return TravelDB(shared_path("memoryarena-travel-db"), FLIGHTS)


def test_tables_load_with_dropna_as_upstream(db):
    assert len(db.table("accommodations")) == 4285  # 762 of 5,047 dropped (710 lack house_rules)
    assert len(db.table("restaurants")) == 9551 and len(db.table("attractions")) == 5302


def test_city_tools_filter_exactly_and_print_dataframes(db):
    out, err = db.execute("RestaurantSearch", {"city": "Rockford"})
    assert not err and out.splitlines()[0].split() == [
        "Name",
        "Average",
        "Cost",
        "Cuisines",
        "Aggregate",
        "Rating",
        "City",
    ]
    assert "Coco Bambu" in out and len(out.splitlines()) == 28  # header + 27 restaurants
    out, _ = db.execute("AccommodationSearch", {"city": "Rockford"})
    assert (
        "Pure luxury one bdrm + sofa bed on Central Park" in out and "Lower East Dream Room" not in out
    )  # no house_rules → dropped
    assert out.splitlines()[0].split()[:3] == ["NAME", "price", "room"]
    assert (
        db.execute("AccommodationSearch", {"city": "rockford"})[0] == "There is no attraction in this city."
    )  # upstream bug
    assert "Burpee Museum of Natural History" in db.execute("AttractionSearch", {"city": "Rockford"})[0]
    assert db.execute("RestaurantSearch", {"city": "Atlantis"})[0] == "There is no restaurant in this city."


def test_distance_matrix_costs_and_missing_values(db):
    out, err = db.execute("DistanceMatrix", {"origin": "Detroit (MI)", "destination": "Norfolk", "mode": "driving"})
    assert (
        not err
        and out == "origin: Detroit\ndestination: Norfolk\ncost: 57\nduration: 10 hours 55 mins\ndistance: 1,144 km"
    )
    assert (
        "cost: 1144" in db.execute("DistanceMatrix", {"origin": "Detroit", "destination": "Norfolk", "mode": "taxi"})[0]
    )
    none = db.execute("DistanceMatrix", {"origin": "St. Petersburg", "destination": "Rockford", "mode": "driving"})[0]
    assert none == "origin: St. Petersburg\ndestination: Rockford\ncost: None\nduration: None\ndistance: None"
    day = db.execute("DistanceMatrix", {"origin": "Hartford", "destination": "Denver", "mode": "taxi"})[0]  # "1 day …"
    assert "duration: 1 day" in day and "cost: None" in day and "distance: None" not in day  # as run_for_evaluation
    strict = TravelDB(shared_path("memoryarena-travel-db"), FLIGHTS, day_routes=False)
    assert (
        "duration: None"
        in strict.execute("DistanceMatrix", {"origin": "Hartford", "destination": "Denver", "mode": "taxi"})[0]
    )


def test_city_search(db):
    assert (
        db.execute("CitySearch", {"state": "Illinois"})[0]
        == "Moline, Belleville, Bloomington, Champaign, Chicago, Rockford, Peoria"
    )
    assert db.execute("CitySearch", {"state": "Atlantis"})[0] == "Invalid State"


def test_flight_search_on_our_fixture(db):
    out, err = db.execute("FlightSearch", {"origin": "St. Petersburg", "destination": "Rockford", "date": "2022-03-16"})
    assert not err and "F3573659" in out and "F3573700" in out and "F3573120" not in out
    assert out.splitlines()[0].split()[:3] == ["Flight", "Number", "Price"]
    assert (
        db.execute("FlightSearch", {"origin": "Rockford", "destination": "St. Petersburg", "date": "2022-03-17"})[0]
        == "There is no flight from Rockford to St. Petersburg on 2022-03-17."
    )


def test_missing_flights_table_fails_only_flight_search(tmp_path):
    db = TravelDB(shared_path("memoryarena-travel-db"), tmp_path / "nope.csv")
    out, err = db.execute("FlightSearch", {"origin": "A", "destination": "B", "date": "2022-03-16"})
    assert (
        err
        and out.startswith("Error executing FlightSearch: flights table not found at")
        and str(tmp_path / "nope.csv") in out
    )
    assert not db.execute("RestaurantSearch", {"city": "Rockford"})[1]


def test_bad_arguments_and_unknown_tools_are_error_observations(db):
    out, err = db.execute("RestaurantSearch", {"town": "Rockford"})
    assert err and out.startswith("Error executing RestaurantSearch: missing or non-string argument(s): city")
    assert db.execute("DistanceMatrix", {"origin": "A", "destination": 3, "mode": "taxi"})[1]
    out, err = db.execute("HotelSearch", {"city": "Rockford"})
    assert err and all(n in out for n in TOOL_NAMES)
    assert db.execute("CitySearch", "Illinois")[1]  # arguments not an object


def test_own_mini_database_in_the_upstream_layout(tmp_path):
    (tmp_path / "restaurants").mkdir()
    (tmp_path / "restaurants" / "clean_restaurant_2022.csv").write_text(
        ",Name,City,Cuisines,Average Cost,Aggregate Rating\n"
        "0,Tiny Diner,Smallville,Cafe,12,4.1\n"
        "1,No Rating,Smallville,Cafe,9,\n"
    )
    (tmp_path / "googleDistanceMatrix").mkdir()
    (tmp_path / "googleDistanceMatrix" / "distance.csv").write_text(
        'origin,destination,cost,duration,distance\nSmallville,Bigtown,,2 hours 1 min,"99 km"\n'
    )
    db = TravelDB(tmp_path)
    out = db.execute("RestaurantSearch", {"city": "Smallville"})[0]
    assert "Tiny Diner" in out and "No Rating" not in out  # dropna
    assert (
        "cost: 4"
        in db.execute("DistanceMatrix", {"origin": "Smallville", "destination": "Bigtown", "mode": "driving"})[0]
    )
    out, err = db.execute("AttractionSearch", {"city": "Smallville"})
    assert err and "table not found" in out and "attractions.csv" in out
    assert (
        "flights/clean_Flights_2022.csv"
        in db.execute("FlightSearch", {"origin": "a", "destination": "b", "date": "c"})[0]
    )
    with pytest.raises(FileNotFoundError, match="db_dir"):
        TravelDB(tmp_path / "absent")
