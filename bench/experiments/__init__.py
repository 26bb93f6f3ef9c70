"""Experiments: questions answered once (a change measured before and after, a candidate tried and set aside).

Each is indexed in bench/README.md with its question, its answer and the page of docs that keeps the answer. They
import the kept benchmarks' helpers (bench.data, bench.metrics, bench.pipeline, ...); nothing kept imports them.
"""
