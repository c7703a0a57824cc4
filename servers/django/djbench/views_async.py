"""Async views: the ASGI server (uvicorn). Django's async ORM (aget / aupdate) hands each
query to a thread with sync_to_async; the connection comes from the per-process pool."""
import asyncio
from operator import attrgetter

from django.core.cache import cache
from django.db.models.functions import Now
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import timezone

from benchcommon.workloads import DELAY_SECONDS

from . import common
from .models import Fortune, User

UPDATED_FIELDS = ["username", "updated_at"]


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


# ---- the database suite (CONTRACT.md, section 6) ----------------------------------------

async def queries(request):
    """n users by primary key: n awaited User.objects.aget(pk=) calls, one SELECT each, one
    after another."""
    if problem := common.check_suite_request(request):
        return problem
    aget = User.objects.aget
    return common.users_response(
        [await aget(pk=pk) for pk in common.random_ids(common.parse_n(request))])


async def updates(request):
    """n distinct users read with aget(pk=), then, in ascending id order, each written with
    asave(update_fields=[...]): one single-row UPDATE per user, in autocommit."""
    if problem := common.check_suite_request(request):
        return problem
    aget = User.objects.aget
    users = [await aget(pk=pk) for pk in common.distinct_random_ids(common.parse_n(request))]
    users.sort(key=attrgetter("user_id"))
    now = timezone.now()  # the server's UTC clock, sent as a bound parameter
    for user in users:
        user.username = common.random_username()
        user.updated_at = now
        await user.asave(update_fields=UPDATED_FIELDS)
    return common.users_response(users)


async def fortunes(request):
    """One SELECT of the whole table (async for fetches it in one go), one fortune added in
    memory, sorted by message (code-point order), rendered by Django's template engine."""
    if problem := common.check_suite_request(request):
        return problem
    rows = [fortune async for fortune in Fortune.objects.all()]
    rows.append(Fortune(id=common.ADDED_FORTUNE[0], message=common.ADDED_FORTUNE[1]))
    rows.sort(key=attrgetter("message"))
    return render(request, "fortunes.html", {"fortunes": rows})


async def cached(request):
    """n users from the process's LocMemCache; each id missing from it is read with
    aget(pk=), one SELECT per distinct missed id, and stored.

    The cache is called with its sync get_many / set_many on the event loop's thread, not
    aget_many / aset_many: LocMemCache is a dict behind a lock in this process (no I/O, no
    blocking), and Django's async cache methods are BaseCache's generic wrappers, aget_many
    being one sync_to_async thread hop per key (100 hops for n=100), which would measure
    thread hand-offs rather than the cache. Only the event loop's thread touches the cache."""
    if problem := common.check_suite_request(request):
        return problem
    keys = [common.cache_key(pk) for pk in common.random_ids(common.parse_n(request))]
    found = cache.get_many(keys)
    if len(found) < len(keys):
        aget = User.objects.aget
        missed = sorted({int(key[5:]) for key in keys if key not in found})
        fill = {common.cache_key(pk): common.user_dict(await aget(pk=pk)) for pk in missed}
        cache.set_many(fill)
        found.update(fill)
    return JsonResponse([found[key] for key in keys], safe=False)


# ---- the HTTP workloads (servers/README.md) -------------------------------------------

async def upload(request):
    """Django's ASGI handler has already received the whole body (into a
    SpooledTemporaryFile: memory up to FILE_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB, then a temporary
    file) before any view runs; it is read from there through the CRC in chunks."""
    return common.check_workload_request(request, "POST") or common.upload_response(request)


async def delay(request):
    """An asyncio sleep: the worker's event loop serves other requests meanwhile."""
    if problem := common.check_workload_request(request, "GET"):
        return problem
    await asyncio.sleep(DELAY_SECONDS)
    return common.delay_response()
