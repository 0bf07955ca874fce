"""``python -m fastbias`` runs the command-line tool."""
from .cli import main

raise SystemExit(main())
