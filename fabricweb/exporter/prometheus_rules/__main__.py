"""`python -m fabricweb.exporter.prometheus_rules`: see the package's docstring."""

import sys

from fabricweb.exporter.prometheus_rules import main

sys.exit(main())
