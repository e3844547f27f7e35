"""gunicorn's settings for fabricweb's web processes: gunicorn reads ./gunicorn.conf.py of its working directory,
so the Dockerfile's and docker-compose.yml's `gunicorn fabricweb.wsgi` (WORKDIR /app) and bench/ run with it."""


def post_worker_init(worker) -> None:
    """Each worker renders /metrics' health series once before it serves (fabricweb.exporter.views.warm_up)."""
    from fabricweb.exporter.views import warm_up

    warm_up()
    worker.notify()  # alive: the warm-up ran before the worker's first heartbeat
