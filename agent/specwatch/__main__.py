"""`python -m specwatch` is the `specwatch` command."""

from specwatch.cli import main

raise SystemExit(main())
