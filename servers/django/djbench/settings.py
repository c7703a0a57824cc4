"""Production settings for the Django benchmark servers, all from the harness's environment.

One project serves two servers (see the manifests):
  - servers/django       gunicorn, WSGI, sync views   (BENCH_DJANGO_VIEWS unset / "sync")
  - servers/django_asgi  uvicorn, ASGI, async views   (BENCH_DJANGO_VIEWS=async)
"""
import os

from benchcommon import workloads

ENV = os.environ

BENCH_SERVER_ID = ENV.get("BENCH_SERVER_ID", "django")
BENCH_DB = ENV.get("BENCH_DB", "none")
BENCH_ORM = ENV.get("BENCH_ORM", "1") == "1"
BENCH_TOKEN = ENV.get("BENCH_TOKEN", "hardcoded_token")
BENCH_ASYNC_VIEWS = ENV.get("BENCH_DJANGO_VIEWS", "sync") == "async"
BENCH_DB_POOL_SIZE = max(1, int(ENV.get("BENCH_DB_POOL_SIZE") or 1))

if BENCH_DB not in ("postgres", "mysql", "none"):
    raise RuntimeError(f"BENCH_DB must be postgres, mysql or none, not {BENCH_DB!r}")

# Nothing is signed (no sessions, no CSRF, no auth), but Django refuses to start without one.
SECRET_KEY = ENV.get("DJANGO_SECRET_KEY") or "benchmark-server-signs-nothing"
DEBUG = False
ALLOWED_HOSTS = ["*"]

# Only the app that holds the `users` model. No contenttypes/auth/sessions/messages/admin:
# the API authenticates with a static `token` header, keeps no server-side state and serves
# no HTML but the suite's one template page, so those apps (and their middleware below)
# would only add per-request work. The app's templates/ holds fortunes.html (APP_DIRS).
INSTALLED_APPS = ["djbench"]

# No middleware but the HTTP workloads' (below): no SessionMiddleware/AuthenticationMiddleware
# (token header instead of sessions), no CsrfViewMiddleware (no cookies, so no CSRF surface),
# no MessageMiddleware, no CommonMiddleware (routes are matched exactly; an unknown path is a
# JSON 404, never a redirect), no SecurityMiddleware (no TLS here, plain HTTP on loopback).
MIDDLEWARE = []

# The HTTP workloads (servers/README.md). BENCH_COMPRESSION=1: a compression middleware
# first, so that it compresses every response, static files included. Under WSGI Django's
# own GZipMiddleware (gzip level 6; a body under 200 bytes is sent as it is). Under ASGI
# django-http-compression (gzip level 6, br quality 4, zstd level 3; under 50 bytes as is):
# Django 5.2's GZipMiddleware compresses each chunk of an async streaming response (the
# static files here) as a gzip member of its own, and curl and httpx decode the first
# member only (a 1 MiB file came out as its first 8 KiB).
# /static/: the folder BENCH_STATIC_DIR as STATIC_ROOT, served by Django's usual production
# static-file middleware: WhiteNoise under WSGI; ServeStatic (WhiteNoise's fork with an
# async middleware) under ASGI, where WhiteNoise's sync-only middleware would send every
# request of every test through a thread and back. Each indexes the folder once at
# start-up and answers only the files in it (anything else falls through to the URLconf:
# a JSON 404).
STATIC_URL = workloads.STATIC_URL
STATIC_ROOT = workloads.static_dir()
if workloads.compression_on():
    MIDDLEWARE.append("django_http_compression.middleware.HttpCompressionMiddleware"
                      if BENCH_ASYNC_VIEWS else "django.middleware.gzip.GZipMiddleware")
if STATIC_ROOT:
    MIDDLEWARE.append("servestatic.middleware.ServeStaticMiddleware" if BENCH_ASYNC_VIEWS
                      else "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "djbench.urls"
WSGI_APPLICATION = "djbench.wsgi.application"

USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False

DEFAULT_AUTO_FIELD = "django.db.models.AutoField"


def _database() -> dict:
    common = {
        "NAME": ENV.get("BENCH_DB_NAME", "webservers_bench"),
        "USER": ENV.get("BENCH_DB_USER", "bench"),
        "PASSWORD": ENV.get("BENCH_DB_PASSWORD", ""),
        "HOST": ENV.get("BENCH_DB_HOST", "127.0.0.1"),
        # Not Django's persistent connections (CONN_MAX_AGE > 0, one per thread): a fixed
        # pool of BENCH_DB_POOL_SIZE connections per process instead (below), opened at
        # start-up, from which a request checks a connection out at its first query and
        # returns it when the request ends. Django requires CONN_MAX_AGE = 0 with a pool.
        # Why a pool under both servers: under ASGI, Django runs every request's ORM calls
        # on a fresh per-request thread with a fresh per-request DatabaseWrapper, so
        # CONN_MAX_AGE cannot keep anything (it leaks one connection per request instead;
        # Django's docs: disable persistent connections under ASGI and use the backend's
        # pool). Under WSGI, one connection per thread would tie the HTTP concurrency
        # (gunicorn --threads) to the connection budget; with a pool the thread count is
        # the server's own setting and the budget stays W x BENCH_DB_POOL_SIZE.
        "CONN_MAX_AGE": 0,
        # No per-request liveness check (it would cost a round trip on every first query
        # of a request); a connection that errors is still dropped by Django.
        "CONN_HEALTH_CHECKS": False,
    }
    if BENCH_DB == "postgres":
        # Django's own psycopg pool (psycopg-pool): min = max = BENCH_DB_POOL_SIZE, so the
        # pool never grows or shrinks; a request waits at most 30 s for a free connection.
        pool = {"min_size": BENCH_DB_POOL_SIZE, "max_size": BENCH_DB_POOL_SIZE, "timeout": 30}
        return {**common, "ENGINE": "django.db.backends.postgresql",
                "PORT": ENV.get("BENCH_DB_PORT", "5432"), "OPTIONS": {"pool": pool}}
    # MySQL / MariaDB. DATETIME(6) columns hold UTC: with USE_TZ=True and no per-database
    # TIME_ZONE Django writes and reads them as UTC; the session time zone is pinned to UTC
    # too so that NOW()/CURRENT_TIMESTAMP(6) (used for updated_at) is UTC whatever the
    # server's own time zone is.
    # Django has no MySQL pool: djbench.mysql_pool is Django's MySQL backend (mysqlclient)
    # plus a fixed per-process pool of pool_size connections with the same semantics as
    # Django's PostgreSQL pool (see that module).
    options = {"charset": "utf8mb4", "init_command": "SET time_zone = '+00:00'",
               "pool_size": BENCH_DB_POOL_SIZE}
    return {**common, "ENGINE": "djbench.mysql_pool", "PORT": ENV.get("BENCH_DB_PORT", "3306"),
            "OPTIONS": options}


# The database suite's /fortunes/ page: Django's own template engine (the Django template
# language), autoescaping on (its default; the template never uses |safe or autoescape off),
# templates from djbench/templates/ (APP_DIRS). With DEBUG = False Django wraps the loaders in
# its cached loader, so the template is compiled once per process. No context processors:
# the page needs nothing from the request.
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"autoescape": True, "context_processors": []},
}]

# The database suite's /cached/: Django's cache framework with its in-process LocMemCache,
# so every worker process has its own cache (nothing is shared between processes). It must
# hold all 10,000 users and never drop one: TIMEOUT None (no expiry) and MAX_ENTRIES 20,000.
# LocMemCache culls a third of its entries when a set() finds it holding MAX_ENTRIES keys,
# which with exactly 10,000 could still happen when two threads fill the same missed id at
# once; with 20,000 it cannot (there are only 10,000 keys).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "djbench-users",
        "TIMEOUT": None,
        "OPTIONS": {"MAX_ENTRIES": 20_000},
    }
}

# BENCH_DB=none (plain / to json cases): no database at all; the user views answer 404.
DATABASES = {} if BENCH_DB == "none" else {"default": _database()}

# Warnings and errors only, to stderr. django.request would log every 4xx as a warning
# (one line per rejected request: a log per request under a bad-token or 404 load), so it
# logs from ERROR up (5xx, which must never happen).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "level": "WARNING"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {
        "django": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "django.request": {"handlers": ["stderr"], "level": "ERROR", "propagate": False},
    },
}
