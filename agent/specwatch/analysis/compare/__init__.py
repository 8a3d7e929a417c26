"""Comparisons: two configs (a canary and stable, or the two sides of a restart) on acceptance
and on goodput at the same load, with the factor that decides."""
