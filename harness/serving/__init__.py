"""The serving layer: engines and the load that G2, G3 and G4 share, below the gate
libraries (which never import one another; tests/unit/test_layering.py).

arms.py        start / stop / restart an arm (command or playbook), wait for health
engines.py     what runs behind each endpoint, recorded and stopped; the clean slate
enginelogs.py  the engines' logs kept with the run
identity.py    an engine's facts (argv, environment, server config), the arms' comparison
inspection.py  reading those facts from the host's processes
running.py     the engine's code as it runs (executable, cwd, files)
cells.py       the layouts x tiers measured, the documents each phase asks
phases.py      a phase's spec, its fixed output length and stored parameters
phase_checks.py  what every measured phase must show before it counts
gate_run.py    what a serving session uses of the running gate (GateRun)
layout_fit.py  TP x instances against the GPUs each host has
problems.py    why a phase or cell cannot be decided: a code with parameters
disks.py       the accelerator's devices (storage hosts, the GPU hosts' KV volume) read
               from diskstats: G3 around each phase, G4 at each window's edge
"""
