"""Load phases that run on the site's client host (docs/remote.md, "The load agent").

harness.remote.agent is the agent's own program (`gate-agent`, shipped as its own slim
wheel by harness.bundle.agent_wheel); it imports only the load generator, so nothing in
this package's __init__ may import more.
"""
