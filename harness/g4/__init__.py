"""G4, 72 h stability of the accelerated stack (docs/g4.md). The suite is a skeleton
until the soak (issue 26) drives it: its plan is one check that says the soak is not
built, so a G4 run ends INCONCLUSIVE and never PASS. The judgement the soak will feed is
here already, pure and tested:

plan.py      the suite's plan, its config checks and the settings that weaken it
windows.py   a soak's requests cut into windows (send time; tokens at completion)
trend.py     a metric's drift: the slope after the first hour, with its interval
criteria.py  every criterion over the windows, the accelerator engaged in each one
"""
