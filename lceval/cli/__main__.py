"""``python -m lceval.cli`` (as ``python -m lceval`` and the ``lceval`` console script)."""

from lceval.cli import main

raise SystemExit(main())
