"""The engine (decode, join, score, window; no I/O) and the asyncio runner around it."""
