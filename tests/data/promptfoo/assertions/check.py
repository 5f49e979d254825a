def get_assert(output, context):
    """promptfoo's python assertion file form: get_assert(output, context)."""
    return {"pass": "five" not in output, "score": 1.0 if output else 0.0, "reason": "checked by check.py"}
