"""The anchor's runtime knobs, backed by moegemm's process-wide settings."""

from .. import _moegemm
from ._errors import invalid


def set_num_sms(num_sms: int) -> None:
    """Cap persistent GEMMs at num_sms SMs; any value from 0 (all) to the SM count, odd ones included."""
    _moegemm.set_num_sms(num_sms)


def get_num_sms() -> int:
    """The SM cap; with no cap set, the device's SM count (as the anchor reports it)."""
    num_sms = _moegemm.get_num_sms()
    return num_sms if num_sms else _moegemm.device_info().sm_count


def set_pdl(enable: bool) -> None:
    """Programmatic dependent launch for every GEMM (default off)."""
    _moegemm.set_pdl(bool(enable))


def get_pdl() -> bool:
    return _moegemm.get_pdl()


# The anchor's tuning knobs that have no counterpart here. Each validates its argument as the anchor does and keeps
# it, so that code written for the anchor runs unchanged; none changes which kernel runs or what it computes.
_tc_util = 0
_ignore_compile_dims = False
_block_size_multiple_of = (1, 1)


def set_tc_util(tc_util: int) -> None:
    """The anchor's tensor-core utilisation hint: an integer from 0 to 100, 0 meaning 100. The anchor's SM90
    heuristics do not read it, nor does moegemm's planner."""
    global _tc_util
    if isinstance(tc_util, bool) or not isinstance(tc_util, int) or not 0 <= tc_util <= 100:
        raise invalid(f"tc_util: must be an integer from 0 to 100 (0 means 100), got {tc_util!r}")
    _tc_util = tc_util


def get_tc_util() -> int:
    """The hint set last; 100 when none (or 0) was set, as in the anchor."""
    return _tc_util if _tc_util != 0 else 100


def set_ignore_compile_dims(value: bool) -> None:
    """The anchor bakes M, N and K into its kernels unless this is True. moegemm's kernels never take the problem's
    sizes as compile-time constants (one kernel per tile configuration, any shape), so either value behaves as True
    does in the anchor."""
    global _ignore_compile_dims
    if not isinstance(value, int):  # bool, or an int as the anchor's binding converts it
        raise invalid(f"value: must be a bool, got {value!r}")
    _ignore_compile_dims = bool(value)


def set_block_size_multiple_of(value) -> None:
    """The anchor's constraint on its tile sizes: an int for both, or a (block_m, block_n) pair of positive ints (on
    SM90 the anchor steps block_n by lcm(16, n) and ignores the m part). moegemm's planner picks its tiles from its
    own cost model (docs/heuristics.md) and does not apply it; results do not depend on it."""
    global _block_size_multiple_of
    pair = value if isinstance(value, tuple) else (value, value)
    if len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in pair):
        raise invalid(f"value: must be a positive int or a (block_m, block_n) pair of positive ints, got {value!r}")
    _block_size_multiple_of = pair
