"""Content-Security-Policy on every HTML response (dashboard, login, wall, admin, error pages).

Scripts only from our own origin: no inline script, no event-handler attribute, no `javascript:`
URL and no eval runs, so markup that slipped into a page (a node_desc is set by root on any node)
cannot execute. Our scripts are static files (static/dashboard/*.js, plotly.js from the pinned
package, Django admin's own); the templates hold none inline. Not on /metrics or JSON: no browser
renders them, and scrapers ignore the header.
"""

from __future__ import annotations

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        # plotly.js adds <style> elements of its own (its addStyleRule: modebar, hover labels); without
        # 'unsafe-inline' Chromium blocks them ("Cannot addRelatedStyleRule, probably due to strict CSP").
        # Styles run no code; scripts stay strict.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",  # the empty favicon (data:,) and plotly's toImage snapshots
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    )
)
HEADER = "Content-Security-Policy"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html") and HEADER not in response:
            response[HEADER] = POLICY
        return response
