"""gunicorn settings that the command line of manifest.toml does not carry."""


def post_worker_init(worker):
    """Open this worker process's DB pool (all BENCH_DB_POOL_SIZE connections) before it
    serves: the app is loaded (no --preload), so this runs after the fork, in the worker."""
    from djbench.startup import open_pool

    open_pool()


def worker_exit(server, worker):
    """Close the worker's DB pool when the worker stops."""
    from djbench.startup import close_pool

    close_pool()
