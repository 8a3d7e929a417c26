"""Drift: per-slice CUSUM against a sliding baseline, and the traffic mix's movement."""
