"""The anchor's deep_gemm.testing helpers that moegemm provides: calc_diff, bench, count_bytes and get_arch_major."""


def calc_diff(x, y) -> float:
    """1 - 2 * sum(x * y) / sum(x^2 + y^2) in float64: 0 for equal tensors, 0 when both are all zeros."""
    from ._frameworks import is_torch_tensor

    if is_torch_tensor(x) or is_torch_tensor(y):
        x, y = x.double(), y.double()
        denominator = (x * x + y * y).sum()
        if denominator.item() == 0:
            return 0.0
        return float(1 - 2 * (x * y).sum() / denominator)
    import numpy as np

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    denominator = float((x * x + y * y).sum())
    if denominator == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denominator)


def bench(fn, num_warmups: int = 5, num_tests: int = 10, high_precision: bool = False) -> float:
    """Mean seconds per call of fn() on the current CUDA stream, timed with CUDA events after a 256 MB L2 flush.
    high_precision first queues a large matmul so that the timed calls are not limited by launch overhead."""
    import torch

    torch.cuda.synchronize()
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    flush.zero_()
    for _ in range(num_warmups):
        fn()
    if high_precision:
        x = torch.randn((8192, 8192), dtype=torch.float32, device="cuda")
        x @ x
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(num_tests):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / num_tests / 1e3


def count_bytes(*tensors) -> int:
    """Bytes held by the given tensors (numel times element size), through nested tuples and lists, None skipped:
    the anchor's tests divide it by the time for their GB/s (an FP8 operand's (data, scales) pair counts both)."""
    total = 0
    for t in tensors:
        if isinstance(t, (tuple, list)):
            total += count_bytes(*t)
        elif t is not None:
            total += t.numel() * t.element_size() if hasattr(t, "element_size") else t.size * t.itemsize
    return total


def get_arch_major() -> int:
    """The current CUDA device's compute capability major version (9 on Hopper)."""
    import torch

    return torch.cuda.get_device_capability()[0]
