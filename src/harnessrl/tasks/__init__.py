"""Tasks and suites on disk, the bubblewrap sandbox that runs agent commands, built-in suites."""
