"""Verdicts: the zone windows' evidence per threshold, which window decides, and the green /
yellow / red verdict with its gates, dwell and hysteresis."""
