"""Serving engines other than vLLM: what each sends per request, and what its command and
/metrics look like. vLLM's own readers stay in vllm/ (the first engine, and the reference)."""
