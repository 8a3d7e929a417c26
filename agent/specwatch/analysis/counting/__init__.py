"""Counting: a slice's integer sums, kept since start and over sliding windows, split by context
bucket, and the statistics (with their intervals) every other room reads off them."""
