"""``python -m sklearn_ltr``: see :mod:`sklearn_ltr.cli`."""

import sys

from sklearn_ltr.cli import main

if __name__ == "__main__":
    sys.exit(main())
