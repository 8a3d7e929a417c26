"""vLLM's own formats: its per-request blocks in answers and streams, its usage chunk, its log
lines. The first engine, and the reference the others are read beside."""
