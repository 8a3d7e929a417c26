"""The sidecar's parts that are not the proxy or the analysis: how observations reach the
analysis (intake), the loops that keep it running (loops), and what it keeps on disk (states).
runtime.Sidecar wires them together."""
