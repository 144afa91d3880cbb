"""``python -m recompile_cli.guards SCRIPT [ARGS]``: a script under ``RECOMPILE_CLI_GUARD``.

``-m`` runs this file as ``__main__``; the guard itself is the importable package's, so the script
meets the ``RecompileLimitExceeded`` it can catch and filter.
"""

import sys

from recompile_cli.guards import main

sys.exit(main())
