"""``python -m tidelog.cli``: the ``tidelog`` command."""

import sys

from tidelog.cli import main

sys.exit(main())
