"""G2 single-node baselines: fio on each configured target, GPU health, GDS readiness."""
