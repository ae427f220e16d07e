"""Running mean/std normaliser of observations and goals, as in OpenAI baselines' HER.

The statistics are kept as float64 ``sum``, ``sumsq`` and ``count``, so normalisers of
several processes combine by adding them (e.g. one ``all_reduce`` each). The standard
deviation has a floor of ``eps`` (baselines: 0.01). Inputs are clipped to ``+-clip_obs``
before they are counted or normalised, normalised values to ``+-clip_normalized``.

``form="mrl"`` takes the moments as mrl's ``MeanStdNormalizer`` does
(``mrl/modules/normalizer.py``): ``(x - mean) / sqrt(var + 1e-8)``, no floor, and its
running statistics start where mrl's ``RunningMeanStd`` starts, a count of ``1e-4`` at mean
0 and variance 1 (so before anything is counted the std is ``sqrt(1 + 1e-8)``, and that
start weighs ``1e-4`` against the vectors counted after it). The saved statistics are the
counted vectors' alone in both forms.

Statistics can also be added where a batch lies (:meth:`Normalizer.add_tensor`, e.g. the
relabelled goals of a batch sampled on a GPU): they gather on that device, batches there
are normalised with them (:meth:`Normalizer.normalize_device`, no host read, so it can be
part of a captured update), and the host, told after the update
(:meth:`Normalizer.added_on_device`: a replayed CUDA graph runs no Python, so the update
cannot tell it), folds them into its own statistics in one transfer the next time it
needs them (acting, saving).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
import torch

__all__ = [
    "MRL_START_COUNT",
    "MRL_VARIANCE_EPS",
    "NORMALIZER_FORMS",
    "Normalizer",
    "NormalizerForm",
]

NormalizerForm = Literal["baselines", "mrl"]
"""How the standard deviation is taken from the running moments: baselines' (a floor of
``eps``) or mrl's (``sqrt(var + 1e-8)`` from mrl's start); see the module."""
NORMALIZER_FORMS: tuple[str, ...] = get_args(NormalizerForm)

MRL_START_COUNT = 1e-4
"""The count mrl's ``RunningMeanStd`` starts from, at mean 0 and variance 1."""
MRL_VARIANCE_EPS = 1e-8
"""What mrl's ``MeanStdNormalizer`` adds to the variance before its square root."""


class Normalizer:
    """Running normaliser of vectors of size ``size``.

    Mean and std are computed when first needed after the statistics change (the loop
    adds one env step and acts once per iteration, so at most once an iteration).
    """

    def __init__(
        self,
        size: int,
        clip_obs: float = 200.0,
        clip_normalized: float = 5.0,
        eps: float = 1e-2,
        form: NormalizerForm = "baselines",
    ) -> None:
        if form not in NORMALIZER_FORMS:
            raise ValueError(f"form must be 'baselines' or 'mrl', got {form!r}")
        self.size = size
        self.clip_obs = clip_obs
        self.clip_normalized = clip_normalized
        self.eps = eps
        """The floor of the standard deviation (the baselines form)."""
        self.form = form
        self._sum = np.zeros(size, np.float64)
        self._sumsq = np.zeros(size, np.float64)
        self._count = 0.0
        self._moments: tuple[np.ndarray, np.ndarray] | None = None
        self._version = 0
        """Counts changes of the host statistics (the device copies follow it)."""
        self._devices: dict[torch.device, _DeviceStats] = {}
        self._pending = False
        """Whether statistics were added on a device since the host last folded them in."""

    @property
    def count(self) -> float:
        """How many vectors were counted."""
        self._fold()
        return self._count

    @property
    def mean(self) -> np.ndarray:
        """Running mean (zeros before any update); read-only."""
        return self._mean_std()[0]

    @property
    def std(self) -> np.ndarray:
        """Running standard deviation, at least ``eps`` (ones before any update), or in the
        mrl form ``sqrt(var + 1e-8)`` from mrl's start; read-only."""
        return self._mean_std()[1]

    def update(self, x: np.ndarray) -> None:
        """Count a batch of vectors ``(..., size)`` (clipped to ``+-clip_obs`` first)."""
        self.add_stats(self.batch_stats(x))

    def batch_stats(self, x: np.ndarray) -> np.ndarray:
        """``[sum (size), sum of squares (size), count]`` of a batch, for :meth:`add_stats`."""
        x = np.clip(np.asarray(x, np.float64).reshape(-1, self.size), -self.clip_obs, self.clip_obs)
        return np.concatenate([x.sum(axis=0), np.square(x).sum(axis=0), [float(len(x))]])

    def add_stats(self, stats: np.ndarray) -> None:
        """Add statistics from :meth:`batch_stats` (possibly summed over processes)."""
        self._sum += stats[: self.size]
        self._sumsq += stats[self.size : 2 * self.size]
        self._count += float(stats[-1])
        self._changed()

    def add_tensor(self, x: torch.Tensor) -> None:
        """Count a batch of vectors ``(..., size)`` where it lies (:meth:`update` for a
        tensor): device work only, so it can be part of a compiled or captured step, which
        changes no Python state: the caller then says :meth:`added_on_device` after it."""
        stats = self._device(x.device).pending
        z = x.detach().reshape(-1, self.size).double().clamp(-self.clip_obs, self.clip_obs)
        stats[: self.size].add_(z.sum(dim=0))
        stats[self.size : 2 * self.size].add_(z.square().sum(dim=0))
        stats[-1:].add_(float(len(z)))

    def added_on_device(self) -> None:
        """Note, on the host, that :meth:`add_tensor` counted vectors on a device: the next
        read of the statistics (acting, saving) folds them into the host's."""
        self._pending = True

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``clip((clip(x, +-clip_obs) - mean) / std, +-clip_normalized)`` in float32."""
        mean, std = self._mean_std()
        z = np.clip(np.asarray(x, np.float64), -self.clip_obs, self.clip_obs)
        z -= mean
        z /= std
        return np.clip(z, -self.clip_normalized, self.clip_normalized, out=z).astype(np.float32)

    def normalize_tensor(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`normalize` for a tensor, computed where it lies (float32; for batches
        sampled by a buffer on a GPU), with the statistics added there included."""
        self.sync_device(x.device)
        return self.normalize_device(x)

    def sync_device(self, device: torch.device) -> None:
        """Copy the host statistics to ``device`` if they changed since the last copy."""
        stats = self._device(device)
        if stats.version != self._version:
            host = np.concatenate([self._sum, self._sumsq, [self._count]])
            stats.base.copy_(torch.from_numpy(host))
            stats.version = self._version

    def normalize_device(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`normalize_tensor` without the host check: device work only (call
        :meth:`sync_device` first), so it can be compiled or captured in a CUDA graph."""
        stats = self._device(x.device)
        mean, std = moments(stats.base + stats.pending, self.size, self.eps, self.form)
        z = (x.float().clamp(-self.clip_obs, self.clip_obs) - mean.float()) / std.float()
        return z.clamp(-self.clip_normalized, self.clip_normalized)

    def state_dict(self) -> dict[str, Any]:
        """The statistics as CPU float64 tensors and a float count."""
        self._fold()
        return {
            "sum": torch.from_numpy(self._sum.copy()),
            "sumsq": torch.from_numpy(self._sumsq.copy()),
            "count": self._count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the statistics saved by :meth:`state_dict`."""
        self._sum, self._sumsq = (
            torch.as_tensor(state[key]).cpu().numpy().astype(np.float64).reshape(self.size)
            for key in ("sum", "sumsq")
        )
        self._count = float(state["count"])
        for stats in self._devices.values():
            stats.pending.zero_()
        self._pending = False
        self._changed()

    def _changed(self) -> None:
        self._moments = None
        self._version += 1

    def _device(self, device: torch.device) -> _DeviceStats:
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:  # the key of its tensors
            device = torch.device("cuda", torch.cuda.current_device())
        stats = self._devices.get(device)
        if stats is None:
            stats = self._devices[device] = _DeviceStats(2 * self.size + 1, device)
        return stats

    def _fold(self) -> None:
        """Add the statistics gathered on devices to the host's (one transfer each)."""
        if not self._pending:
            return
        self._pending = False
        for stats in self._devices.values():
            self.add_stats(stats.pending.to("cpu", copy=True).numpy())
            stats.pending.zero_()

    def _mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        self._fold()
        if self._moments is None:
            total = np.concatenate([self._sum, self._sumsq, [self._count]])
            mean, std = moments(total, self.size, self.eps, self.form)
            mean.flags.writeable = std.flags.writeable = False
            self._moments = (mean, std)
        return self._moments


def moments(
    total: Any, size: int, eps: float, form: NormalizerForm = "baselines"
) -> tuple[Any, Any]:
    """Mean and standard deviation (at least ``eps``; 0 and 1 before anything is counted)
    of statistics ``[sum (size), sum of squares (size), count]``: a float64 numpy array on
    the host, or a tensor on a device (device work only). In the ``mrl`` form: with mrl's
    start counted in (:data:`MRL_START_COUNT` vectors of mean 0 and variance 1, so of
    square 1), the std ``sqrt(var + 1e-8)``."""
    if form == "mrl":
        count = total[-1:] + MRL_START_COUNT
        mean = total[:size] / count
        square = (total[size : 2 * size] + MRL_START_COUNT) / count
        variance = (square - mean * mean).clip(min=0.0) + MRL_VARIANCE_EPS
        return mean, np.sqrt(variance) if isinstance(variance, np.ndarray) else variance.sqrt()
    count = total[-1:]
    seen = count > 0
    safe = count + ~seen  # 1 where nothing was counted
    mean = total[:size] / safe
    variance = (total[size : 2 * size] / safe - mean * mean).clip(min=eps**2)
    std = np.sqrt(variance) if isinstance(variance, np.ndarray) else variance.sqrt()
    return mean * seen, std * seen + ~seen


class _DeviceStats:
    """A normaliser's statistics on one device: the host's as last copied, and those added
    there since the host last folded them in (``[sum, sum of squares, count]`` each)."""

    def __init__(self, length: int, device: torch.device) -> None:
        self.base = torch.zeros(length, dtype=torch.float64, device=device)
        self.pending = torch.zeros(length, dtype=torch.float64, device=device)
        self.version = -1
