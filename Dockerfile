# One image for every role (web, beat, ingest worker, node agent); the command picks the role.
FROM python:3.11-slim-bookworm

# The node agent reads ports through the distribution's pyverbs, matched to its libibverbs
# (PyPI's pyverbs does not load against it); central roles just carry it unused.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-pyverbs \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY collectors ./collectors
COPY fabricweb ./fabricweb
COPY templates ./templates
COPY static ./static
COPY manage.py gunicorn.conf.py ./
RUN pip install --no-cache-dir . \
    && mkdir -p /opt/pyverbs-only \
    && ln -s /usr/lib/python3/dist-packages/pyverbs /opt/pyverbs-only/pyverbs \
    && echo /opt/pyverbs-only > "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pyverbs.pth"

RUN useradd --system --home /app fabric \
    && mkdir -p /app/var /sim && chown fabric /app/var /sim
USER fabric
EXPOSE 8000
CMD ["gunicorn", "fabricweb.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
