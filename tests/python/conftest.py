"""Shared fixtures. The suite runs against an installed moegemm (pip install .) or an in-tree build
(PYTHONPATH=build/python:python); see docs/python.md."""

import pytest

import moegemm


@pytest.fixture
def no_device():
    """For tests that hand moegemm fake device pointers: they must never reach a real GPU."""
    info = moegemm.device_info()
    if info.available:
        pytest.skip(f"a CUDA device is present ({info.name}): fake device pointers must not reach it")
    return info


@pytest.fixture
def cuda_torch():
    """torch with a usable CUDA device that moegemm sees too."""
    torch = pytest.importorskip("torch", reason="GPU tests need torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    info = moegemm.device_info()
    if not info.available:
        pytest.skip(f"no CUDA device for moegemm: {info.reason}")
    return torch
