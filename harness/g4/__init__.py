"""G4, 72 h stability of the accelerated stack (docs/g4.md): a detached soak of the
accelerated arm, viewed by the gate process and judged window by window.

session.py    the viewer: starts or re-attaches to the soak, stores its windows, samples
              the devices itself, judges, stops the soak early on a hard miss
placement.py  where the soak runs (`load.placement`): this machine, or the client host
              through the load agent (harness/remote/soak_agent.py, soak_client.py)
soak.py, spool.py
              the soak itself and its spool (with its windows and the engines' counters
              in harness/loadgen/soak*.py, where the agent's wheel carries them)
stored.py     the stored windows with the gate's own evidence (devices.py, processes.py,
              engine_clock.py: the engines' own counters, scraped by the gate)
criteria.py   every criterion over the windows, the accelerator engaged in each one;
              clock_check.py holds the soak's windows against the engines' counts
plan.py       the suite's plan, its config checks and the settings that weaken it
trend.py      a metric's drift: the slope after the first hour, with its interval
hardware*.py  the hosts' Xid / ECC / NVMe counters, read by the gate itself
detached.py   `gate status` and `gate runs abort` of a soak whose viewer is gone
"""
