"""G1 arrival acceptance: what each host must have (the BOM in gates.g1), the probes that
read it over the transport, and the pure comparisons that turn outputs into findings."""
