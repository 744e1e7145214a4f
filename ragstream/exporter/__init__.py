"""Prometheus exposition: the collectors and the HTTP server."""
