"""moegemm.deep_gemm: a drop-in for the DeepGEMM (v2.6.1) Python API on SM90, backed by moegemm.

``import moegemm.deep_gemm as deep_gemm`` gives the anchor's GEMM entry points (same names, argument names,
defaults, shapes, dtypes and scale layouts; D written in place; None returned), its layout and cast utilities and
its runtime knobs. The GEMMs need torch; the layout and cast helpers also take numpy arrays. docs/python.md lists
where this module differs from the anchor.
"""

from . import testing, utils
from ._names import GEMM_NAMES as _GEMM_NAMES
from .runtime import (get_num_sms, get_pdl, get_tc_util, set_block_size_multiple_of, set_ignore_compile_dims,
                      set_num_sms, set_pdl, set_tc_util)
from .utils import *  # noqa: F401,F403  (the anchor re-exports its utils at top level)
from .utils import __all__ as _utils_all

try:
    from . import gemm as _gemm
except ModuleNotFoundError as _missing:
    if _missing.name != "torch":
        raise

    def _needs_torch(name):
        def call(*args, **kwargs):
            raise ModuleNotFoundError(f"moegemm.deep_gemm.{name} takes torch tensors: install torch", name="torch")

        call.__name__ = call.__qualname__ = name
        return call

    for _name in _GEMM_NAMES:
        globals()[_name] = _needs_torch(_name)
else:
    for _name in _GEMM_NAMES:
        globals()[_name] = getattr(_gemm, _name)

calc_diff = testing.calc_diff

__all__ = list(_GEMM_NAMES) + list(_utils_all) + [
    "calc_diff", "get_num_sms", "get_pdl", "get_tc_util", "set_block_size_multiple_of", "set_ignore_compile_dims",
    "set_num_sms", "set_pdl", "set_tc_util", "testing", "utils",
]
