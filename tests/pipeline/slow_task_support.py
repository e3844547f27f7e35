"""A task that takes a while, for a Celery worker under test to be busy with (`-I tests.pipeline.slow_task_support`).

Not a test module: the worker loads it by name, so that a test can stop the broker while a task runs.
"""

from __future__ import annotations

import time

from celery import shared_task

SLOW = "tests.pipeline.slow"


@shared_task(name=SLOW)
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"
