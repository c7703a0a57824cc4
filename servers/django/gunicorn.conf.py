"""gunicorn settings that the command line of manifest.toml does not carry."""


def post_worker_init(worker):
    """Open each request thread's persistent DB connection before the worker serves."""
    from djbench.startup import open_thread_connections

    open_thread_connections(worker.tpool, worker.cfg.threads)


def worker_exit(server, worker):
    """Close the request threads' DB connections when the worker stops."""
    from djbench.startup import close_thread_connections

    close_thread_connections()
