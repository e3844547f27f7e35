"""The agent's main loop: central beat's polls taken off node.<name> by BRPOP, each answered at once.

The messages are Celery's: beat sends `collect` as a Celery task (protocol 2, JSON body) to the
node's queue, and the agent's snapshot is a Celery task message that `manage.py ingest` reads
(publish.py). What takes them off the queue is this loop, not a Celery worker. The worker's
event loop, kombu's multi-channel poller, message objects and the strategy that calls the task
were most of what a poll cost on a node whose CPU caches the jobs had emptied since the last
poll: about two thirds of the agent's CPU in the slower state of this project's bench machine,
against a fifth for reading the node (docs/agent.md, "Why a loop and not a Celery worker"). Here
a poll is one BRPOP reply, one JSON decode, the read and one LPUSH, on connections of its own (resp.py).

What the worker did for the agent is kept:
- a poll past its `expires` header is dropped unread and said (the node misses that poll);
- a message that is no `collect` call, or not Celery's JSON, is dropped and said, and the loop goes on;
- a poll that fails is logged with its traceback, and the loop goes on;
- a broker that cannot be reached is tried again after a growing wait (1 s to 32 s), said at each try;
- a wait for a poll the broker refuses (its ACL) is said and asked again 32 s later, not at once;
- the first snapshot of each served node (the hello) is sent once the broker answers;
- SIGTERM or SIGINT stops it at once while it waits, or after the poll it is running.

The polls are taken without acknowledgement, as before: a poll is worth nothing after its interval, and
an agent killed mid-poll loses that one (the dispatcher sends the next to an empty queue).
"""

from __future__ import annotations

import base64
import json
import logging
import signal
import time
from datetime import UTC, datetime

from fabricweb.agent.config import AgentConfig
from fabricweb.agent.publish import Publisher
from fabricweb.agent.resp import Address, BrokerError, BrokerLost, Connection
from fabricweb.agent.tasks import Agent
from fabricweb.names import COLLECT, node_queue

log = logging.getLogger(__name__)

RETRY_FIRST_S = 1.0
RETRY_MAX_S = 32.0
# Beyond the BRPOP's own wait: a reply that late means a connection the network lost (half-open).
REPLY_GRACE_S = 15.0
CONNECT_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 10.0  # a PING or LPUSH unanswered that long: the connection is taken for lost
# A wait the broker refuses (an ACL without BRPOP on the node's queue) is asked again after this long, not at once.
REFUSED_PAUSE_S = 32.0


class BadPoll(ValueError):
    """A message on a node's queue that is not a `collect` this agent can run."""


class Stopped(BaseException):  # (not an Exception: no `except Exception` in a poll may swallow it)
    """Raised by the stop signal's handler to end a wait on the broker at once."""


def poll_of(raw: bytes | str) -> tuple[str, datetime | None]:
    """(node, expires) of a `collect` message as kombu's Redis transport stores it; BadPoll saying why not."""
    try:
        envelope = json.loads(raw)
    except ValueError as e:
        raise BadPoll(f"not JSON: {e}") from None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("headers"), dict):
        raise BadPoll("not a Celery task message (no headers)")
    headers = envelope["headers"]
    if headers.get("task") != COLLECT:
        raise BadPoll(f"a task this agent does not run: {str(headers.get('task'))[:100]!r}")
    if envelope.get("content-type") != "application/json":
        raise BadPoll(f"a body of {str(envelope.get('content-type'))[:60]!r}: the agent takes JSON only")
    body = envelope.get("body")
    properties = envelope.get("properties") if isinstance(envelope.get("properties"), dict) else {}
    try:
        if properties.get("body_encoding") == "base64":
            body = base64.b64decode(body)
        call = json.loads(body)
    except (TypeError, ValueError) as e:
        raise BadPoll(f"a body that is not JSON: {e}") from None
    if not (isinstance(call, list) and len(call) == 3 and isinstance(call[0], list) and isinstance(call[1], dict)):
        raise BadPoll("a protocol 2 body is [args, kwargs, embed]")
    args, kwargs, _embed = call
    node = kwargs.get("node", args[0] if args else None)
    if not isinstance(node, str):
        raise BadPoll("no node named: collect takes the node's name")
    return node, expiry(headers.get("expires"))


def expiry(value) -> datetime | None:
    """The `expires` header as an aware datetime (ISO 8601 as Celery writes it; naive: UTC); None: never."""
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise BadPoll(f"an expires header that is no date: {str(value)[:60]!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def connection(config: AgentConfig) -> Connection:
    """A connection to the agent's broker (REDIS_URL, FABRIC_REDIS_CA_FILE), opened at its first command."""
    return Connection(Address(config.broker_url, config.ca_file), COMMAND_TIMEOUT_S, CONNECT_TIMEOUT_S)


class PollLoop:
    """Answers the polls of `nodes` until stopped: run() returns the process's exit status."""

    def __init__(self, config: AgentConfig, nodes: list[str]) -> None:
        self.config = config
        self.queues = [node_queue(n) for n in nodes]
        # Two connections: this one waits in BRPOP while the port events' thread may push on the publisher's.
        self.polls = connection(config)
        self.agent = Agent(config, Publisher(connection(config)))
        self.stopping = False
        self._waiting = False

    def run(self) -> int:
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            if self._until_broker_answers():
                self.agent.hello(self.queues)
                self.agent.watch_events()
                log.info("agent ready: taking polls from %s", ", ".join(self.queues))
                while not self.stopping:
                    self.once()
        except Stopped:
            pass
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            self.agent.stop()
            self.polls.close()
        log.info("agent stopped")
        return 0

    def once(self) -> None:
        """Wait up to the broker wait for one poll and answer it; a broker gone is waited for."""
        wait = self.config.broker_wait_s
        try:
            reply = self._wait(lambda: self.polls.command("BRPOP", *self.queues, wait, timeout_s=wait + REPLY_GRACE_S))
        except BrokerLost as e:
            log.warning("broker lost while waiting for a poll: %s", e)
            self._until_broker_answers()
            return
        except BrokerError as e:
            log.error("the broker refused the wait for a poll (%s): asking again in %g s", e, REFUSED_PAUSE_S)
            self._wait(lambda: time.sleep(REFUSED_PAUSE_S))
            return
        if reply is not None:
            self.answer(reply[1])

    def answer(self, raw: bytes | str, now: datetime | None = None) -> None:
        """Run the poll `raw` is; what cannot be run is said and dropped."""
        try:
            node, expires = poll_of(raw)
        except BadPoll as e:
            log.error("dropped a message on %s: %s", "/".join(self.queues), e)
            return
        if expires is not None and expires < (now or datetime.now(UTC)):
            log.warning("poll of %s expired before this agent could take it: it is over a poll interval behind", node)
            return
        log.debug("poll of %s received", node)
        try:
            result = self.agent.collect(node)
        except Exception:
            log.exception("poll of %s failed", node)
        else:
            log.debug("poll of %s done: %r", node, result)

    def _until_broker_answers(self) -> bool:
        """PING until the broker answers, waiting longer each time; False when stopped first."""
        delay = RETRY_FIRST_S
        while not self.stopping:
            try:
                self._wait(lambda: self.polls.command("PING"))
                return True
            except (BrokerLost, BrokerError) as e:
                log.error("broker %s not reachable (%s): trying again in %g s", self.polls.address, e, delay)
            self._wait(lambda seconds=delay: time.sleep(seconds))
            delay = min(delay * 2, RETRY_MAX_S)
        return False

    def _wait(self, call):
        self._waiting = True
        try:
            if self.stopping:
                raise Stopped
            return call()
        finally:
            self._waiting = False

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True
        if self._waiting:  # a poll being answered finishes first; a wait ends now
            raise Stopped
