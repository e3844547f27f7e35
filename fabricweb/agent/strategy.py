"""How the agent's worker runs a poll: its task function called at once, without Celery's Request and trace.

Celery hands each task message to its task's strategy (`Task.Strategy`). The default one builds a Request,
passes it to the pool, and traces the call (task state, result, signals before and after, its log lines):
a long stretch of code run once every few seconds on a node whose CPU caches the jobs have emptied since,
for a task whose result is ignored and which no one revokes or inspects (the agent has no remote control).
This strategy keeps what a poll needs of it: a poll past its `expires` is dropped unread and said (the node
misses that poll), one that fails is logged with its traceback, and the message is acknowledged after the
call, as `task_acks_late` does (the agent's polls are consumed without acknowledgement: app.poll_queues).
A message Celery could not decode or that is not a task call is refused as the default strategy refuses it
(the consumer's InvalidTaskError and DecodeError handlers). LOG_LEVEL=DEBUG logs each poll received and done.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from celery.exceptions import InvalidTaskError
from celery.utils.time import maybe_iso8601

log = logging.getLogger(__name__)


def expired(expires, now: datetime | None = None) -> bool:
    """Whether a message's `expires` header (ISO 8601, as Celery writes it; None: never) has passed."""
    if not expires:
        return False
    when = maybe_iso8601(expires)
    if when.tzinfo is None:  # Celery's UTC default (enable_utc)
        when = when.replace(tzinfo=UTC)
    return when < (now or datetime.now(UTC))


def direct(task, app, consumer, **kwargs):
    """The strategy of a poll task (`Strategy="fabricweb.agent.strategy:direct"`)."""
    connection_errors = consumer.connection_errors

    def on_message(message, payload, ack, reject, callbacks, **options) -> None:
        headers = message.headers
        body = message.decode() if payload is None else payload
        if not (isinstance(body, (list, tuple)) and len(body) == 3):
            raise InvalidTaskError(f"{task.name}: a protocol 2 body is [args, kwargs, embed]")
        args, call_kwargs, _embed = body
        if not (isinstance(args, (list, tuple)) and isinstance(call_kwargs, dict)):
            raise InvalidTaskError(f"{task.name}: expected a list of arguments and a dict of keyword arguments")
        if expired(headers.get("expires")):
            node = call_kwargs.get("node", args[0] if args else None)
            log.warning("poll of %s expired before this agent could take it: it is over a poll interval behind", node)
            ack(log, connection_errors)
            return
        task_id = headers.get("id")
        log.debug("%s[%s] received", task.name, task_id)
        try:
            result = task.run(*args, **call_kwargs)
        except Exception:
            log.exception("%s[%s] failed", task.name, task_id)
        else:
            log.debug("%s[%s] done: %r", task.name, task_id, result)
        finally:
            ack(log, connection_errors)

    return on_message
