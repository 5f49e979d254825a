"""A small telecom domain for the tests, written for them (not tau2-bench's code): enough of a
carrier and of the customer's phone to grade tau2-bench's recorded service-issue simulations in
results/telecom-gpt-4.1.json. The agent's tools act on `state["carrier"]`, the user's on
`state["phone"]`; after each call the phone learns from the carrier whether its line is active
and whether a bill awaits payment, and a paid request settles the bill (tau2's `sync_tools`).
The phone finds the network (its service status changes) only on a network search: a reboot,
airplane mode turned off, a re-seated SIM card.
"""

USER_TOOLS = ["check_status_bar", "check_sim_status", "check_payment_request", "make_payment"]
USER_TOOLS += ["toggle_airplane_mode", "reboot_device", "reseat_sim_card"]
ENV_FUNCTIONS = ["set_user_info", "turn_airplane_mode_on", "suspend_line_for_overdue_bill"]
ENV_FUNCTIONS += ["simulate_network_search", "unseat_sim_card", "break_apn_settings", "lock_sim_card"]
ENV_FUNCTIONS += ["assert_service_status", "assert_no_overdue_bill"]


def _synced(state):
    """The phone's view of the carrier after a call."""
    phone, carrier = state["phone"], state["carrier"]
    line = next((line for line in carrier["lines"].values() if line["phone_number"] == phone["number"]), None)
    phone["line_active"] = line is not None and line["status"] == "Active"
    request = phone.get("payment_request")
    if request and request["paid"]:
        carrier["bills"][request["bill_id"]]["status"] = "Paid"
        phone["payment_request"] = None
    if phone.get("payment_request") is None:
        waiting = [b for b, bill in sorted(carrier["bills"].items()) if bill["status"] == "Awaiting Payment"]
        if waiting:
            phone["payment_request"] = {
                "bill_id": waiting[0],
                "amount": carrier["bills"][waiting[0]]["amount"],
                "paid": False,
            }


def _search(state):
    phone = state["phone"]
    usable = not phone["airplane_mode"] and phone["sim"] == "active" and phone["line_active"]
    phone["service"] = "connected" if usable else "no_service"


def _status_bar(state):
    phone = state["phone"]
    if phone["airplane_mode"]:
        return "Status Bar: Airplane Mode"
    return "Status Bar: Excellent" if phone["service"] == "connected" else "Status Bar: No Signal"


# The agent's tools
def get_customer_by_phone(state, phone_number):
    return {"customer_id": "C1001"}


def get_details_by_id(state, id):
    return state["carrier"]["lines"].get(id) or state["carrier"]["bills"].get(id)


def get_bills_for_customer(state, customer_id, limit=None):
    return list(state["carrier"]["bills"].values())


def send_payment_request(state, customer_id, bill_id):
    state["carrier"]["bills"][bill_id]["status"] = "Awaiting Payment"
    _synced(state)
    return f"Payment request sent to the customer for bill {bill_id}"


def resume_line(state, customer_id, line_id):
    line = state["carrier"]["lines"][line_id]
    if line["status"] != "Suspended":
        raise ValueError("Line must be suspended to resume")
    line["status"] = "Active"
    _synced(state)
    return {"message": "Line resumed successfully"}


def transfer_to_human_agents(state, summary):
    return "Transfer successful"


# The user's tools
def check_status_bar(state):
    return _status_bar(state)


def check_sim_status(state):
    return state["phone"]["sim"]


def check_payment_request(state):
    return state["phone"]["payment_request"]


def make_payment(state):
    request = state["phone"]["payment_request"]
    if request is None:
        raise ValueError("No payment request")
    request["paid"] = True
    _synced(state)
    return f"Payment of {request['amount']} USD has been made for bill {request['bill_id']}."


def toggle_airplane_mode(state):
    state["phone"]["airplane_mode"] = not state["phone"]["airplane_mode"]
    _search(state)
    return _status_bar(state)


def reboot_device(state):
    _search(state)
    return _status_bar(state)


def reseat_sim_card(state):
    if state["phone"]["sim"] == "missing":
        state["phone"]["sim"] = "active"
    _search(state)
    return _status_bar(state)


# The functions that set a task up and check it
def set_user_info(state, name, phone_number):
    state["phone"]["number"] = phone_number
    _synced(state)


def turn_airplane_mode_on(state):
    state["phone"]["airplane_mode"] = True
    _search(state)


def suspend_line_for_overdue_bill(state, customer_id, line_id, new_bill_id, contract_ended):
    state["carrier"]["lines"][line_id]["status"] = "Suspended"
    state["carrier"]["bills"][new_bill_id] = {"bill_id": new_bill_id, "amount": 65.0, "status": "Overdue"}
    _synced(state)


def simulate_network_search(state):
    _search(state)


def unseat_sim_card(state):
    state["phone"]["sim"] = "missing"
    _search(state)


def break_apn_settings(state):
    state["phone"]["apn_broken"] = True


def lock_sim_card(state, mode):
    state["phone"]["sim"] = f"locked_{mode}"
    _search(state)


def assert_service_status(state, expected_status):
    return state["phone"]["service"] == expected_status


def assert_no_overdue_bill(state, overdue_bill_id):
    bill = state["carrier"]["bills"].get(overdue_bill_id)
    return bill is None or bill["status"] == "Paid"
