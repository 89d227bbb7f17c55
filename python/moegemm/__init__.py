"""moegemm: FP8 and BF16 GEMMs for dense and Mixture-of-Experts layers on NVIDIA Hopper (sm_90a).

``moegemm`` itself is framework-free: tensors are any DLPack, buffer-protocol or ``__cuda_array_interface__``
object, streams are integers, outputs are written in place. ``moegemm.deep_gemm`` is a drop-in for the
DeepGEMM Python API on torch tensors, and ``moegemm.torch_ops`` registers the GEMMs as torch custom ops.
"""

import pkgutil as _pkgutil

# An in-tree CMake build leaves the extension in <build>/python/moegemm/; with <build>/python on sys.path this
# makes it part of the package.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _moegemm  # noqa: E402
from ._moegemm import (  # noqa: E402
    CONTIGUOUS_ALIGNMENT,
    DeviceInfo,
    InvalidArgumentError,
    KernelConfig,
    MAX_SEGMENT_ALIGNMENT,
    PrecompiledKernel,
    bf16_gemm,
    device_info,
    fp8_gemm_nt,
    fp8_gemm_nt_1d1d,
    get_num_sms,
    get_pdl,
    k_grouped_bf16_gemm_tn,
    k_grouped_fp8_gemm_nt,
    m_grouped_bf16_gemm_contiguous,
    m_grouped_bf16_gemm_masked,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_masked,
    plan_bf16_gemm,
    plan_fp8_gemm_nt,
    plan_fp8_gemm_wgrad,
    precompile_all,
    precompile_bf16_gemm,
    precompile_fp8_gemm_nt,
    precompile_fp8_gemm_wgrad,
    set_num_sms,
    set_pdl,
    tma_aligned_size,
    version,
)

__version__ = version()

__all__ = [
    "CONTIGUOUS_ALIGNMENT",
    "DeviceInfo",
    "InvalidArgumentError",
    "KernelConfig",
    "MAX_SEGMENT_ALIGNMENT",
    "PrecompiledKernel",
    "__version__",
    "bf16_gemm",
    "device_info",
    "fp8_gemm_nt",
    "fp8_gemm_nt_1d1d",
    "get_num_sms",
    "get_pdl",
    "k_grouped_bf16_gemm_tn",
    "k_grouped_fp8_gemm_nt",
    "m_grouped_bf16_gemm_contiguous",
    "m_grouped_bf16_gemm_masked",
    "m_grouped_fp8_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nt_masked",
    "plan_bf16_gemm",
    "plan_fp8_gemm_nt",
    "plan_fp8_gemm_wgrad",
    "precompile_all",
    "precompile_bf16_gemm",
    "precompile_fp8_gemm_nt",
    "precompile_fp8_gemm_wgrad",
    "set_num_sms",
    "set_pdl",
    "tma_aligned_size",
    "version",
]
