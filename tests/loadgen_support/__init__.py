"""Test support for the load generator: a real vLLM-shaped streaming server with faults."""
