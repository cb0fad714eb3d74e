"""The gate suites (pytest). Installed as the package `harness.gates`."""
