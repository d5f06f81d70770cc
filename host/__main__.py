"""``python -m host``: the ``tessera`` command."""

from host.cli import main

raise SystemExit(main())
