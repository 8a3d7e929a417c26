"""Serving engines other than vLLM: what each sends per request, and what its command and
/metrics look like. vLLM's own readers stay in vllm/ (the first engine, and the reference)."""


class Contradiction(ValueError):
    """A record that contradicts itself (the parse-error reason inconsistent_spec_block): counted
    as malformed, never analysed."""


class Unreadable(ValueError):
    """A field that is not what its engine documents (bad_spec_block)."""
