"""What each command runs; cli.py parses the command line and dispatches here."""
