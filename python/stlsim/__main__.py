"""``python -m stlsim``: the same as the ``stlsim`` command."""

from .cli import main

raise SystemExit(main())
