"""Sync views: the WSGI server (gunicorn gthread). A request thread checks a connection out of
the process's pool at its first query; Django returns it when the request ends."""
import time
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


# ---- the database suite (CONTRACT.md, section 6) ----------------------------------------

def queries(request):
    """n users by primary key: n User.objects.get(pk=) calls, one SELECT each, in turn."""
    if problem := common.check_suite_request(request):
        return problem
    get = User.objects.get
    return common.users_response([get(pk=pk) for pk in common.random_ids(common.parse_n(request))])


def updates(request):
    """n distinct users read with get(pk=), then, in ascending id order, each written with
    save(update_fields=[...]): one single-row UPDATE per user, in autocommit (a model
    without parents is saved without a transaction)."""
    if problem := common.check_suite_request(request):
        return problem
    get = User.objects.get
    users = [get(pk=pk) for pk in common.distinct_random_ids(common.parse_n(request))]
    users.sort(key=attrgetter("user_id"))
    now = timezone.now()  # the server's UTC clock, sent as a bound parameter
    for user in users:
        user.username = common.random_username()
        user.updated_at = now
        user.save(update_fields=UPDATED_FIELDS)
    return common.users_response(users)


def fortunes(request):
    """One SELECT of the whole table, one fortune added in memory, sorted by message (Python
    str order is code-point order), rendered by Django's template engine (autoescape on)."""
    if problem := common.check_suite_request(request):
        return problem
    rows = list(Fortune.objects.all())
    rows.append(Fortune(id=common.ADDED_FORTUNE[0], message=common.ADDED_FORTUNE[1]))
    rows.sort(key=attrgetter("message"))
    return render(request, "fortunes.html", {"fortunes": rows})


def cached(request):
    """n users from the process's LocMemCache (get_many); each id missing from it is read
    with get(pk=), one SELECT per distinct missed id, and stored (set_many)."""
    if problem := common.check_suite_request(request):
        return problem
    keys = [common.cache_key(pk) for pk in common.random_ids(common.parse_n(request))]
    found = cache.get_many(keys)
    if len(found) < len(keys):
        get = User.objects.get
        missed = sorted({int(key[5:]) for key in keys if key not in found})
        fill = {common.cache_key(pk): common.user_dict(get(pk=pk)) for pk in missed}
        cache.set_many(fill)
        found.update(fill)
    return JsonResponse([found[key] for key in keys], safe=False)


# ---- the HTTP workloads (servers/README.md) -------------------------------------------

def upload(request):
    """The body streamed from gunicorn's socket through the CRC (common.upload_response)."""
    if problem := common.check_workload_request(request, "POST"):
        return problem
    if not request.META.get("CONTENT_LENGTH") and "HTTP_TRANSFER_ENCODING" in request.META:
        # Django's WSGIRequest reads a body up to CONTENT_LENGTH only (0 without one), so a
        # chunked body cannot be read through it: 411, not the checksum of nothing.
        return common.error(411, "Content-Length required")
    return common.upload_response(request)


def delay(request):
    """Waits on the request's own thread (gthread: one thread per request in flight; the
    worker's other threads go on serving)."""
    if problem := common.check_workload_request(request, "GET"):
        return problem
    time.sleep(DELAY_SECONDS)
    return common.delay_response()
