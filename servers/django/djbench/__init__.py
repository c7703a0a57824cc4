"""Django project and app of the benchmark servers `django` (WSGI) and `django_asgi` (ASGI)."""
