"""Parsers of real tool output (nvidia-smi, nvme, fio, Prometheus /metrics, ...).

Each parser is a pure function over text, tested on captured outputs; fetching lives in a
thin wrapper beside it.
"""
