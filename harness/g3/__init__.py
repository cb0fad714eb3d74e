"""G3, the main gate: a paired A/B of the accelerator (see docs/g3.md).

plan.py      which cells, which repetitions, in which seeded ABBA order; the suite's plan
             (the checks it must produce); dry-run estimates
arms.py      start / stop / restart an arm (command or playbook) and wait for health
engines.py   what runs behind each endpoint (read after every start / restart), recorded
             and stopped; the clean slate before a run, a resume or an abort
identity.py  an engine's facts (argv, environment, server config) and the arms' comparison
evidence.py  /metrics deltas and storage read bandwidth during a measured phase
rules.py     pure judgments: arms comparable, restart cold, tier used, failures bounded,
             output at the fixed length
records.py   what a measured phase stores and how a resume reads it back
session.py   runs a cell's repetition pairs, stores every phase, decides with harness.stats
"""
