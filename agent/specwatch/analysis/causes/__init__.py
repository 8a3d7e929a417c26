"""Causes: why a slice's acceptance is poor or suspicious, each named by its own rule."""
