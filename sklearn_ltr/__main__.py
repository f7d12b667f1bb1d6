"""``python -m sklearn_ltr``: see :mod:`sklearn_ltr.cli`."""

import sys

from sklearn_ltr.cli import main

sys.exit(main())
