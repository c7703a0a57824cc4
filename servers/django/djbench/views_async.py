"""Async views: the ASGI server (uvicorn). Django's async ORM (aget / aupdate) hands each
query to a thread with sync_to_async; the connection comes from the per-process pool."""
from django.db.models.functions import Now
from django.http import JsonResponse

from . import common
from .models import User


async def ping(request):
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return JsonResponse(common.PING_BODY)


async def user(request, user_id: str):
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
        # One UPDATE, then one SELECT for the stored row (Django 5.2: no UPDATE ... RETURNING).
        if not await User.objects.filter(pk=pk).aupdate(updated_at=Now(), **fields):
            return common.user_not_found()
    try:
        return common.user_response(await User.objects.aget(pk=pk))
    except User.DoesNotExist:
        return common.user_not_found()


async def plain(request):
    if not common.token_ok(request):
        return common.unauthorized()
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return common.plain_response(request)


async def to_json(request):
    if not common.token_ok(request):
        return common.unauthorized()
    if request.method != "GET":
        return common.method_not_allowed("GET")
    return common.to_json_response(request)
