"""Where events come from: Kafka, a JSONL file, or synthetic traffic."""
