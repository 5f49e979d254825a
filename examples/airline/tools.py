"""A small airline-like domain in tau-bench's style: tools over a JSON backend.

Each tool is `name(state, /, **arguments)`: it reads or changes `state` (the backend document)
and returns what the agent would see. The `tau-reward` assertion replays an agent's calls
through these functions and compares the final state with the task's goal.
"""

from __future__ import annotations

from typing import Any


def search_flights(state: dict[str, Any], /, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """Flights between two airports on a date (read-only)."""
    return [{"flight": fid, **f} for fid, f in state["flights"].items()
            if (f["origin"], f["destination"], f["date"]) == (origin, destination, date)]


def book_flight(state: dict[str, Any], /, user_id: str, flight: str, payment_id: str) -> dict[str, Any]:
    """Book one seat for a user, paid from one of the user's payment methods."""
    user, trip = state["users"][user_id], state["flights"][flight]
    if trip["seats"] < 1:
        raise ValueError(f"flight {flight} is full")
    if user["payment"].get(payment_id, 0) < trip["price"]:
        raise ValueError("insufficient balance")
    user["payment"][payment_id] -= trip["price"]
    trip["seats"] -= 1
    reservation = f"R{100 + len(state['reservations'])}"
    state["reservations"][reservation] = {"user_id": user_id, "flight": flight, "status": "booked"}
    user["reservations"].append(reservation)
    return {"reservation_id": reservation, "charged": trip["price"]}


def cancel_reservation(state: dict[str, Any], /, reservation_id: str) -> dict[str, Any]:
    """Cancel a reservation and free its seat (refunds are not modelled)."""
    reservation = state["reservations"][reservation_id]
    if reservation["status"] == "cancelled":
        raise ValueError("already cancelled")
    reservation["status"] = "cancelled"
    state["flights"][reservation["flight"]]["seats"] += 1
    return {"reservation_id": reservation_id, "status": "cancelled"}
