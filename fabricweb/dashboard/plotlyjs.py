"""plotly.js as the pinned `plotly` package ships it, served as the static file `plotly/plotly.min.js`.

NOCs are often air-gapped: no CDN. A finder (not a copy in static/) keeps one version,
the one pyproject.toml pins, and exposes that one file, not the package's data sets.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

STATIC_NAME = "plotly/plotly.min.js"


def bundled_file() -> Path:
    spec = importlib.util.find_spec("plotly")
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.file = bundled_file()
        self.storage = FileSystemStorage(location=str(self.file.parent))
        self.storage.prefix = "plotly"

    def check(self, **kwargs):
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        if path != STATIC_NAME:
            return [] if find_all else None
        return [str(self.file)] if find_all else str(self.file)

    def list(self, ignore_patterns):
        yield self.file.name, self.storage
