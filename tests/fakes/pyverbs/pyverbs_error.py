"""Exception classes with the hierarchy, messages and error_code of pyverbs' own."""

import os


class PyverbsError(Exception):
    """Base of every pyverbs failure."""

    def __init__(self, msg, error_code=-1):
        # The real class appends the errno and its text when one is given.
        if error_code != -1:
            msg = f"{msg}. Errno: {error_code}, {os.strerror(error_code)}"
        super().__init__(msg)


class PyverbsRDMAError(PyverbsError):
    """An rdma-core call failed."""

    def __init__(self, msg, error_code=-1):
        super().__init__(msg, error_code)
        self._error_code = error_code

    @property
    def error_code(self):
        return self._error_code


class PyverbsUserError(PyverbsError):
    """A bad argument, caught by pyverbs before calling rdma-core."""

    def __init__(self, msg):
        super().__init__(msg)
