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
    """Running normaliser of vectors of size ``size``, with a torch copy on ``device``."""

    def __init__(
        self,
        size: int,
        clip_obs: float = 200.0,
        clip_normalized: float = 5.0,
        eps: float = 1e-2,
        device: str | torch.device = "cpu",
    ) -> None:
        self.size = size
        self.clip_obs = clip_obs
        self.clip_normalized = clip_normalized
        self.eps = eps
        self.device = torch.device(device)
        self.sum = np.zeros(size, np.float64)
        self.sumsq = np.zeros(size, np.float64)
        self.count = 0.0
        self._refresh()

    @property
    def mean(self) -> np.ndarray:
        """Running mean (zeros before any update)."""
        return self.sum / max(self.count, 1.0)

    @property
    def std(self) -> np.ndarray:
        """Running standard deviation, at least ``eps`` (ones before any update)."""
        if self.count == 0:
            return np.ones(self.size)
        variance = self.sumsq / self.count - np.square(self.mean)
        return np.sqrt(np.maximum(self.eps**2, variance))

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
        self._refresh()

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``clip((clip(x, +-clip_obs) - mean) / std, +-clip_normalized)`` in float32."""
        x = np.clip(np.asarray(x, np.float64), -self.clip_obs, self.clip_obs)
        z = np.clip((x - self.mean) / self.std, -self.clip_normalized, self.clip_normalized)
        return z.astype(np.float32)

    def normalize_torch(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`normalize` of a float tensor on ``device`` (for the forward pass)."""
        x = x.clamp(-self.clip_obs, self.clip_obs)
        return ((x - self._mean) / self._std).clamp(-self.clip_normalized, self.clip_normalized)

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
        self._refresh()

    def _refresh(self) -> None:
        """Copy mean and std to float32 tensors on ``device``."""
        self._mean = torch.as_tensor(self.mean, dtype=torch.float32, device=self.device)
        self._std = torch.as_tensor(self.std, dtype=torch.float32, device=self.device)
