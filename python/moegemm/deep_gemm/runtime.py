"""The anchor's runtime knobs, backed by moegemm's process-wide settings."""

from .. import _moegemm


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
