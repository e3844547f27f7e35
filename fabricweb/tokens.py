"""Bearer secrets in URLs and headers (API tokens, wall links): only their hash is kept. Standard library only."""

from __future__ import annotations

import hashlib


def hash_token(token: str) -> str:
    # A plain hash is enough: the token is 32 random bytes, nothing to brute-force as with passwords.
    return hashlib.sha256(token.encode()).hexdigest()
