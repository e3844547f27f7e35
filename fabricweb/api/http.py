"""JSON responses, API errors and the decorator every API view wears (auth, methods, headers)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.csrf import csrf_exempt

from .auth import authenticate

READ_METHODS = ("GET", "HEAD")


class ApiError(Exception):
    """Raised anywhere under a view; becomes {"error": message} with `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def bad_param(name: str, problem: str) -> ApiError:
    return ApiError(400, f"{name}: {problem}")


def not_found(what: str) -> ApiError:
    return ApiError(404, f"no {what}")


# Device strings (node_desc, board_id) are set by root on the node. JSON already keeps them
# data, but escaping <, > and & as well means no content sniffer can ever read markup in a body.
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def json_response(data: object, status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    body = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).translate(_ESCAPES)
    response = HttpResponse(body, status=status, content_type="application/json", headers=headers)
    # What is served depends on who asks, and fabric state goes stale in one poll: never cache.
    response["Cache-Control"] = "no-store"
    response["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    return response


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> HttpResponse:
    return json_response({"error": message}, status=status, headers=headers)


def method_not_allowed(request: HttpRequest) -> HttpResponse:
    return error_response(
        405, f"{request.method} is not allowed: the API is read-only (GET, HEAD)", {"Allow": ", ".join(READ_METHODS)}
    )


UNAUTHORIZED = "authentication required: log in, or send Authorization: Bearer <token>"


def api_view(view: Callable[..., object]) -> Callable[..., HttpResponse]:
    """Wrap a view that returns JSON-able data: authenticate, allow only GET/HEAD, turn ApiError into JSON.

    CSRF does not apply: nothing here changes state, and a POST is refused below with a
    JSON 405 instead of the CSRF middleware's HTML 403.
    """

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        user, problem = authenticate(request)
        if user is None:
            response = error_response(401, problem or UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="fabricweb"'})
        elif request.method not in READ_METHODS:
            response = method_not_allowed(request)
        else:
            request.user = user
            try:
                response = json_response(view(request, *args, **kwargs))
            except ApiError as e:
                response = error_response(e.status, e.message)
        patch_vary_headers(response, ("Authorization", "Cookie"))
        return response

    return wrapper
