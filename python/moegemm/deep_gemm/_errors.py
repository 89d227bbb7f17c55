"""Argument errors raised on the Python side look like the C++ ones: same type, same "moegemm: invalid argument:"
prefix, the argument named first."""

from .._moegemm import InvalidArgumentError


def invalid(message: str) -> InvalidArgumentError:
    return InvalidArgumentError("moegemm: invalid argument: " + message)


def unsupported(message: str) -> NotImplementedError:
    return NotImplementedError("moegemm: unsupported: " + message)
