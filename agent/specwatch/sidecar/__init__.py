"""The sidecar: Sidecar (sidecar.py) wires the proxy, the analysis and the export on one event
loop; its parts are how observations reach the analysis (intake), the readings in turns
(readings), the loops that keep it running (loops), the admin port (admin), what it keeps on
disk (states) and the request text for the cycle log (capture)."""
