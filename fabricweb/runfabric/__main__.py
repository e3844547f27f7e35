"""`python -m fabricweb.runfabric`: see the package's docstring."""

import sys

from fabricweb.runfabric import main

sys.exit(main())
