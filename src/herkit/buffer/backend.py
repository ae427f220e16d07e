"""Where a buffer's stored columns live: numpy arrays on the host, or torch tensors.

A buffer's bookkeeping (episode starts and lengths, slot arithmetic, the random draws)
runs in numpy on the host, and its stored columns and what is gathered from them go
through an :class:`ArrayOps`: a buffer on a device draws exactly the same slots and goals
as a host buffer with the same seed, and returns the same batch, already on its device.
The sampling rules are written over these operations too, so that a device's copy of the
bookkeeping draws with the same code (:mod:`herkit.buffer.device_sampler`). On CUDA, host
arrays (the slots to gather, masks, new steps) reach the device through pinned memory
without waiting for the work queued there, so sampling never stalls a GPU that is still
running earlier updates.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["NUMPY", "ArrayOps", "NumpyOps", "TorchOps", "array_ops", "rows_mask", "to_device"]


class ArrayOps(Protocol):
    """The few operations a buffer performs on its arrays, with numpy's semantics: numpy's
    own on host columns (:class:`NumpyOps`), torch's on tensors (:class:`TorchOps`). A
    backend that lacks one is a type error, not numpy run on tensors."""

    device: Any
    """The torch device of the columns, or None for numpy arrays."""

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A zero-filled column."""
        ...

    def take(self, array: Any, index: Any) -> Any:
        """Rows ``index`` of ``array`` (a host int64 array, or a tensor on the device)."""
        ...

    def assign(self, array: Any, index: Any, values: Any) -> None:
        """``array[index] = values`` (index: a slice, a host int64 array or a tensor)."""
        ...

    def where(self, mask: Any, a: Any, b: Any) -> Any:
        """``a`` where ``mask`` (host or backend booleans, broadcastable), else ``b``."""
        ...

    def repeat(self, array: Any, n: int) -> Any:
        """Each row ``n`` times in a row (``np.repeat(array, n, axis=0)``)."""
        ...

    def cumsum(self, array: Any, axis: int) -> Any:
        """Cumulative sum along ``axis``."""
        ...

    def floor_int(self, array: Any) -> Any:
        """The floor of non-negative numbers, as int64 (a truncation)."""
        ...

    def minimum(self, a: Any, b: Any) -> Any:
        """Element-wise minimum (``b`` may be a number)."""
        ...

    def maximum(self, a: Any, b: Any) -> Any:
        """Element-wise maximum (``b`` may be a number)."""
        ...

    def round_int(self, array: Any) -> Any:
        """Numbers rounded to the nearest integer (halves to even, as ``np.round``), as
        int64."""
        ...

    def log1p(self, array: Any) -> Any:
        """``log(1 + x)``, element-wise."""
        ...

    def searchsorted(self, ordered: Any, values: Any) -> Any:
        """Per value, the index of the first element of ``ordered`` above it."""
        ...

    def arange(self, n: int) -> Any:
        """``0, 1, ..., n - 1`` as int64."""
        ...

    def as_float32(self, array: Any) -> Any:
        """``array`` as float32."""
        ...

    def from_host(self, array: np.ndarray) -> Any:
        """A host array in this backend (no copy for numpy)."""
        ...

    def to_host(self, array: Any) -> np.ndarray:
        """A backend array as a numpy array."""
        ...


class NumpyOps:
    """:class:`ArrayOps` on numpy arrays in host memory (the default)."""

    device: Any = None
    """None: the columns are numpy arrays."""

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return np.zeros(shape, dtype=dtype)

    def take(self, array: Any, index: Any) -> Any:
        return array.take(index, axis=0)

    def assign(self, array: Any, index: Any, values: Any) -> None:
        array[index] = values

    def where(self, mask: Any, a: Any, b: Any) -> Any:
        return np.where(mask, a, b)

    def repeat(self, array: Any, n: int) -> Any:
        return np.repeat(array, n, axis=0)

    def cumsum(self, array: Any, axis: int) -> Any:
        return np.cumsum(array, axis=axis)

    def floor_int(self, array: Any) -> Any:
        return array.astype(np.int64)

    def minimum(self, a: Any, b: Any) -> Any:
        return np.minimum(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    def round_int(self, array: Any) -> Any:
        return np.rint(array).astype(np.int64)

    def log1p(self, array: Any) -> Any:
        return np.log1p(array)

    def searchsorted(self, ordered: Any, values: Any) -> Any:
        return np.searchsorted(ordered, values, side="right")

    def arange(self, n: int) -> Any:
        return np.arange(n, dtype=np.int64)

    def as_float32(self, array: Any) -> Any:
        return np.asarray(array).astype(np.float32)

    def from_host(self, array: np.ndarray) -> Any:
        return array

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)


class TorchOps:
    """:class:`ArrayOps` on torch tensors on ``device`` (a GPU, or the CPU for tests)."""

    def __init__(self, device: Any) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self._last_index: tuple[np.ndarray, Any] | None = None

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.torch.zeros(shape, dtype=self._dtype(dtype), device=self.device)

    def take(self, array: Any, index: Any) -> Any:
        return array.index_select(0, self._index(index))

    def assign(self, array: Any, index: Any, values: Any) -> None:
        key = index if isinstance(index, slice) else self._index(index)
        array[key] = self._tensor(values, array.dtype)

    def where(self, mask: Any, a: Any, b: Any) -> Any:
        mask = self._tensor(mask, self.torch.bool)
        return self.torch.where(mask, self._tensor(a), self._tensor(b))

    def repeat(self, array: Any, n: int) -> Any:
        return self._tensor(array).repeat_interleave(n, dim=0)

    def cumsum(self, array: Any, axis: int) -> Any:
        return self.torch.cumsum(array, dim=axis)

    def floor_int(self, array: Any) -> Any:
        return array.long()  # truncation: the floor of numbers >= 0

    def minimum(self, a: Any, b: Any) -> Any:
        return self.torch.minimum(a, self._tensor(b, a.dtype))

    def maximum(self, a: Any, b: Any) -> Any:
        return self.torch.maximum(a, self._tensor(b, a.dtype))

    def round_int(self, array: Any) -> Any:
        return self.torch.round(array).long()  # halves to even, as numpy's

    def log1p(self, array: Any) -> Any:
        return self.torch.log1p(array)

    def searchsorted(self, ordered: Any, values: Any) -> Any:
        return self.torch.searchsorted(ordered, values, right=True)

    def arange(self, n: int) -> Any:
        return self.torch.arange(n, dtype=self.torch.int64, device=self.device)

    def as_float32(self, array: Any) -> Any:
        return self._tensor(array).float()

    def from_host(self, array: np.ndarray) -> Any:
        return self._tensor(array)

    def to_host(self, array: Any) -> np.ndarray:
        if isinstance(array, self.torch.Tensor):
            return array.detach().cpu().numpy()
        return np.asarray(array)

    def _index(self, index: Any) -> Any:
        if isinstance(index, self.torch.Tensor):  # drawn on the device
            return index
        # A sample gathers six columns with the same slots: copy them to the device once.
        if self._last_index is not None and self._last_index[0] is index:
            return self._last_index[1]
        tensor = to_device(np.ascontiguousarray(index, dtype=np.int64), self.device)
        self._last_index = (index, tensor)
        return tensor

    def _dtype(self, dtype: Any) -> Any:
        """The torch dtype of a numpy one (torch names them alike)."""
        return getattr(self.torch, np.dtype(dtype).name)

    def _tensor(self, value: Any, dtype: Any = None) -> Any:
        if isinstance(value, self.torch.Tensor):
            return value.to(self.device, dtype) if dtype is not None else value
        if isinstance(value, np.ndarray) and value.dtype != object:
            tensor = to_device(np.ascontiguousarray(value), self.device)
            return tensor if dtype is None else tensor.to(dtype)
        if isinstance(value, bool | int | float | np.generic):
            # made on the device (a fill): host data copied in would break a graph capture
            if isinstance(value, np.generic):
                dtype = dtype if dtype is not None else self._dtype(value.dtype)
                value = value.item()
            return self.torch.full((), value, dtype=dtype, device=self.device)
        return self.torch.as_tensor(value, dtype=dtype, device=self.device)


def rows_mask(mask: Any, like: Any) -> Any:
    """A ``(B,)`` mask shaped to broadcast over the rows of ``like`` (``(B, ...)``, any
    rank)."""
    return mask.reshape(-1, *(1,) * (like.ndim - 1))


def to_device(array: np.ndarray, device: Any) -> Any:
    """A host array as a torch tensor on ``device`` without waiting for the work queued
    there: on CUDA through pinned memory (kept until the copy is done), copied
    asynchronously."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


NUMPY = NumpyOps()
"""The host's operations (they hold no state)."""


def array_ops(device: Any = None) -> ArrayOps:
    """Numpy columns for ``device=None``, else torch tensors on ``device``."""
    return NUMPY if device is None else TorchOps(device)
