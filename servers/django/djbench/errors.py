"""JSON error handlers (settings.DEBUG is False, so Django uses these instead of HTML pages)."""
from .common import error


def bad_request(request, exception=None):
    return error(400, "bad request")


def forbidden(request, exception=None):
    return error(403, "forbidden")


def not_found(request, exception=None):
    return error(404, "not found")


def server_error(request):
    return error(500, "internal error")
