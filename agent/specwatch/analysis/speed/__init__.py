"""Speed: the gain of speculation (measured or modelled), the draft's cost, decode time per
output token by load, and the draft length K it advises."""
