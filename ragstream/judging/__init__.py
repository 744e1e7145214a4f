"""Generation judging (SPEC §4): sample answers, judge them off the hot path, window the
scores.

sampler (which answers) -> workers (bounded queue, bounded concurrency) -> judge (`lexical`
heuristic or `openai`-compatible LLM) -> results (windows, Wilson intervals, judge labels,
audit topic). See docs/judging.md.
"""
