"""Sync views: the WSGI server (gunicorn gthread). A request thread checks a connection out of
the process's pool at its first query; Django returns it when the request ends."""
from django.db.models.functions import Now
from django.http import JsonResponse

from . import common
from .models import User


def ping(request):
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return JsonResponse(common.PING_BODY)


def user(request, user_id: str):
    pk, problem = common.check_user_request(request, user_id)
    if problem:
        return problem
    if request.method == "PATCH":
        body, problem = common.read_body(request)
        if problem:
            return problem
        fields, problem = common.parse_update(body)
        if problem:
            return problem
        # One UPDATE; Django 5.2 has no UPDATE ... RETURNING, so the stored row is read
        # back with one SELECT when the UPDATE matched a row.
        if not User.objects.filter(pk=pk).update(updated_at=Now(), **fields):
            return common.user_not_found()
    try:
        return common.user_response(User.objects.get(pk=pk))
    except User.DoesNotExist:
        return common.user_not_found()


def plain(request):
    if not common.token_ok(request):
        return common.unauthorized()
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return common.plain_response(request)


def to_json(request):
    if not common.token_ok(request):
        return common.unauthorized()
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return common.to_json_response(request)
