from django.conf import settings
from django.urls import path

if settings.BENCH_ASYNC_VIEWS:
    from . import views_async as views
else:
    from . import views_sync as views

urlpatterns = [
    path("ping/", views.ping),
    # <str:...> takes any segment: the view answers 401 before looking at the id, and a
    # non-numeric or out-of-range id is a 404 from the view, not from the router.
    path("user/<str:user_id>/", views.user),
    path("plain/", views.plain),
    path("to_json/", views.to_json),
    # the database suite (CONTRACT.md, section 6)
    path("queries/", views.queries),
    path("updates/", views.updates),
    path("fortunes/", views.fortunes),
    path("cached/", views.cached),
    # the HTTP workloads (servers/README.md); /static/ is served by a middleware (settings)
    path("upload/", views.upload),
    path("delay/", views.delay),
]

handler400 = "djbench.errors.bad_request"
handler403 = "djbench.errors.forbidden"
handler404 = "djbench.errors.not_found"
handler500 = "djbench.errors.server_error"
