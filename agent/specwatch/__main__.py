"""`python -m specwatch` is the `specwatch` command."""

from specwatch.cli.main import main

raise SystemExit(main())
