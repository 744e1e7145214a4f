"""Where the agent writes besides /metrics: dead letters, per-query records, judgments."""
