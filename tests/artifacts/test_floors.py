"""The plan on the door holds to the house: docs/architecture.md's layout block lists the rooms
from the ground floor up, each line's floor is the one its imports give it, and no room imports
one on its own floor or above (tests/support/floors.py computes the floors as farm-studio
draws them)."""

from __future__ import annotations

from tests.support.floors import arrows, declared, declared_inside, floors


def test_every_room_says_the_floor_its_imports_give_it() -> None:
    computed = floors()
    said = {room: floor for room, floor, _ in declared()}
    assert said == {room: computed[room] for room in said}
    assert set(computed) - set(said) == {"__init__"}  # the package's own face, no room


def test_the_layout_lists_the_rooms_from_the_ground_floor_up() -> None:
    order = [floor for _, floor, _ in declared()]
    assert order == sorted(order, key=lambda floor: floor or 0)


def test_no_room_imports_one_on_its_own_floor_or_above() -> None:
    said = {room: floor or 0 for room, floor, _ in declared()}
    said["__init__"] = 1
    upward = [
        f"{room} (floor {said[room]}) -> {other} (floor {said[other]})"
        for room, imported in arrows().items()
        for other in imported
        if said[other] >= said[room]
    ]
    assert upward == []


def test_the_rooms_inside_analysis_say_their_floors_in_order() -> None:
    computed = floors("analysis")
    said = {room: floor for room, floor, _ in declared_inside("analysis")}
    assert said == {room: computed[room] for room in said}
    assert set(computed) - set(said) == {"__init__"}
    order = [floor or 0 for _, floor, _ in declared_inside("analysis")]
    assert order == sorted(order)


def test_analysis_is_rooms_by_concept_not_a_web_of_files() -> None:
    """At most half the 109 arrows its 31 flat files drew (#62); floors() refuses a circle."""
    assert sum(len(inner) for inner in arrows("analysis").values()) <= 109 // 2
    assert max(floors("analysis").values()) <= 7
