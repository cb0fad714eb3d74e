"""The offline bundle: everything a site without network needs, in one checked archive.

    build_bundle(BundleRequest(...)) -> Path      `gate bundle` (harness.bundle.build)
    verify_bundle(path) -> BundleContents         `gate bundle verify` (harness.bundle.verify)

Made on a connected machine (pip reaches an index there), carried, and installed at the
site by its own install.sh with `pip --no-index --find-links`. The agent part (gate-agent
wheels per client Python) is what `load.placement: client` ships to the client host.
See docs/remote.md, "Offline bundle".
"""
