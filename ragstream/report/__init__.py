"""Results for people: the demo's live tables, `replay`'s summary and per-query records."""
