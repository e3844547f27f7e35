"""`field__glob`: a shell glob (`*`, `?`) matched by the database in linear time, never by a backtracking regex.

The dashboard's filters took globs as `__regex`, which SQLite runs with Python's `re` for every row: a
glob of 40 `*` and an `x` held a web worker for its whole timeout. Here SQLite runs its own
GLOB operator (its matcher gives up early on patterns that cannot match, no backtracking blow-up), and
PostgreSQL runs LIKE with the glob translated (`*` -> `%`, `?` -> `_`, the others escaped). Runs of `*`
are one `*` before either sees them. The pattern's characters are the forms' (letters, digits, `- _ .`):
no `[` class to translate.
"""

from __future__ import annotations

import re

from django.db.models import CharField, Lookup

_STARS = re.compile(r"\*{2,}")
_LIKE_SPECIAL = str.maketrans({"\\": "\\\\", "%": "\\%", "_": "\\_", "*": "%", "?": "_"})


def collapse(glob: str) -> str:
    """`a***b` -> `a*b`: the same set of names, and no pattern that costs more for its repeats."""
    return _STARS.sub("*", glob)


@CharField.register_lookup
class Glob(Lookup):
    lookup_name = "glob"

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        patterns = [collapse(p) for p in rhs_params]
        if connection.vendor == "sqlite":
            return f"{lhs} GLOB {rhs}", [*lhs_params, *patterns]
        return f"{lhs} LIKE {rhs} ESCAPE '\\'", [*lhs_params, *(p.translate(_LIKE_SPECIAL) for p in patterns)]
