"""G4, 72 h stability of the accelerated stack (docs/gates.md). A skeleton until the soak
(issue 26) fills it: its plan is one check that says the soak is not built, so a G4 run
ends INCONCLUSIVE and never PASS.

plan.py  the suite's plan, its config checks and the settings that weaken it
"""
