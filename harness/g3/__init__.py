"""G3, the main gate: a paired A/B of the accelerator (see docs/g3.md).

plan.py      which cells, which repetitions, in which seeded ABBA order; dry-run estimates
arms.py      start / stop / restart an arm (command or playbook) and wait for health
evidence.py  /metrics deltas and storage read bandwidth during a measured phase
rules.py     pure judgments: arms comparable, restart cold, tier used, failures bounded
session.py   runs a cell's repetitions, stores every phase, decides with harness.stats
"""
