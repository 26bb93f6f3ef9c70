"""Benchmarks: retrieval quality on BEIR SciFact, ingest throughput, search latency, scale (`make bench`)."""
