"""gate: a gated joint-testing harness for KV-cache storage accelerators."""

__version__ = "0.1.0"
