"""The only place where metric, label, recording-rule, alert, header and outcome names are spelled.

Everything else refers to these constants; the collector, the rule and dashboard generators and
docs/metrics.md's table (a test compares them) all read METRICS. Renaming anything here is a
BREAKING change for users' dashboards and alerts: note it in CHANGELOG.md.

`names` holds the StrEnums (labels and values, outcomes, zones, sources, headers, alerts),
`table` what a metric family is and the table METRICS, `counters` the acceptance counters and
`metrics` every other specwatch_* family,
`recorded` the parts of recorded series names, `vllm` vLLM's own metric names and paths; all
are re-exported here.
"""

from specwatch.conventions.counters import *  # noqa: F403
from specwatch.conventions.metrics import *  # noqa: F403
from specwatch.conventions.names import *  # noqa: F403
from specwatch.conventions.recorded import *  # noqa: F403
from specwatch.conventions.table import *  # noqa: F403
from specwatch.conventions.vllm import *  # noqa: F403
