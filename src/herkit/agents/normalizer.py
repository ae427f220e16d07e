"""Running mean/std normaliser of observations and goals, as in OpenAI baselines' HER.

The statistics are kept as float64 ``sum``, ``sumsq`` and ``count``, so normalisers of
several processes combine by adding them (e.g. one ``all_reduce`` each). The standard
deviation has a floor of ``eps`` (baselines: 0.01). Inputs are clipped to ``+-clip_obs``
before they are counted or normalised, normalised values to ``+-clip_normalized``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["Normalizer"]


class Normalizer:
    """Running normaliser of vectors of size ``size``.

    Mean and std are computed when first needed after the statistics change (the loop
    adds one env step and acts once per iteration, so at most once an iteration).
    """

    def __init__(
        self, size: int, clip_obs: float = 200.0, clip_normalized: float = 5.0, eps: float = 1e-2
    ) -> None:
        self.size = size
        self.clip_obs = clip_obs
        self.clip_normalized = clip_normalized
        self.eps = eps
        self.sum = np.zeros(size, np.float64)
        self.sumsq = np.zeros(size, np.float64)
        self.count = 0.0
        self._moments: tuple[np.ndarray, np.ndarray] | None = None
        self._tensors: tuple[Any, torch.Tensor, torch.Tensor] | None = None

    @property
    def mean(self) -> np.ndarray:
        """Running mean (zeros before any update); read-only."""
        return self._mean_std()[0]

    @property
    def std(self) -> np.ndarray:
        """Running standard deviation, at least ``eps`` (ones before any update); read-only."""
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
        self.sum += stats[: self.size]
        self.sumsq += stats[self.size : 2 * self.size]
        self.count += float(stats[-1])
        self._moments = None

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``clip((clip(x, +-clip_obs) - mean) / std, +-clip_normalized)`` in float32."""
        mean, std = self._mean_std()
        z = np.clip(np.asarray(x, np.float64), -self.clip_obs, self.clip_obs)
        z -= mean
        z /= std
        return np.clip(z, -self.clip_normalized, self.clip_normalized, out=z).astype(np.float32)

    def normalize_tensor(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`normalize` for a tensor, computed where it lies (float32; for batches
        sampled by a buffer on a GPU)."""
        moments = self._mean_std()  # the same object until the statistics change
        cached = self._tensors
        if cached is None or cached[0] is not moments or cached[1].device != x.device:
            mean, std = (torch.from_numpy(a.astype(np.float32)).to(x.device) for a in moments)
            cached = self._tensors = (moments, mean, std)
        _, mean_t, std_t = cached
        z = (x.float().clamp(-self.clip_obs, self.clip_obs) - mean_t) / std_t
        return z.clamp(-self.clip_normalized, self.clip_normalized)

    def state_dict(self) -> dict[str, Any]:
        """The statistics as CPU float64 tensors and a float count."""
        return {
            "sum": torch.from_numpy(self.sum.copy()),
            "sumsq": torch.from_numpy(self.sumsq.copy()),
            "count": self.count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the statistics saved by :meth:`state_dict`."""
        self.sum = torch.as_tensor(state["sum"]).cpu().numpy().astype(np.float64).reshape(self.size)
        self.sumsq = (
            torch.as_tensor(state["sumsq"]).cpu().numpy().astype(np.float64).reshape(self.size)
        )
        self.count = float(state["count"])
        self._moments = None

    def _mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        if self._moments is None:
            if self.count == 0:
                mean, std = np.zeros(self.size), np.ones(self.size)
            else:
                mean = self.sum / self.count
                variance = self.sumsq / self.count - np.square(mean)
                std = np.sqrt(np.maximum(self.eps**2, variance))
            mean.flags.writeable = std.flags.writeable = False
            self._moments = (mean, std)
        return self._moments
