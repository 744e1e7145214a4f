"""Tests of ragstream.metrics."""
