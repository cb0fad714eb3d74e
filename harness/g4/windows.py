"""A soak's requests cut into windows, each summarised the way G4 judges it: in
harness/loadgen/soak_windows.py, where the load agent can ship it (the soak summarises
its windows on the client host with `placement: client`)."""

from harness.loadgen.soak_windows import Evidence, Window, cut, summarise

__all__ = ["Evidence", "Window", "cut", "summarise"]
