"""`python -m ragstream` runs the command line."""

from ragstream.cli import main

main()
