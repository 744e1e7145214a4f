"""Tests of ragstream.trec and `ragstream eval`."""
