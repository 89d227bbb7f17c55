"""moegemm::Error codes become Python exceptions of the promised types, carrying the C++ message."""

import pytest

import moegemm
from moegemm import _moegemm

CODES = {
    1: ("invalid argument", moegemm.InvalidArgumentError),
    2: ("unsupported", NotImplementedError),
    3: ("no CUDA device", RuntimeError),
    4: ("CUDA error", RuntimeError),
    5: ("compile error", RuntimeError),
    6: ("stream capture error", RuntimeError),
    7: ("internal error", RuntimeError),
}


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_maps_to_its_exception_with_the_message(code):
    label, expected = CODES[code]
    with pytest.raises(expected) as info:
        _moegemm._raise_error(code, "b.data: must be K-major, got stride[1] = 7")
    assert str(info.value) == f"moegemm: {label}: b.data: must be K-major, got stride[1] = 7"
    assert type(info.value) is expected


def test_invalid_argument_is_a_value_error_and_a_runtime_error():
    # ValueError as the issue asks; RuntimeError too, because the anchor raises RuntimeError for failed checks.
    assert issubclass(moegemm.InvalidArgumentError, ValueError)
    assert issubclass(moegemm.InvalidArgumentError, RuntimeError)


def test_other_codes_are_not_value_errors():
    for code in (3, 4, 5, 6, 7):
        with pytest.raises(RuntimeError) as info:
            _moegemm._raise_error(code, "x")
        assert not isinstance(info.value, (ValueError, NotImplementedError))
