"""The torch device a run's ``--device`` names: ``auto`` resolved where torch is asked
(:func:`resolved_device`), and whether it is a GPU (:func:`on_gpu`, which chooses a GPU
preset before torch loads)."""

from __future__ import annotations

__all__ = ["on_gpu", "resolved_device"]


def resolved_device(device: str) -> str:
    """``device`` (cpu, cuda, cuda:N or auto) with auto resolved: cuda where torch sees a
    GPU, else cpu; ValueError for a CUDA device that torch cannot reach here."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else "no CUDA device visible"
        raise ValueError(
            f"device {device!r} needs CUDA, but torch {torch.__version__} has {build} "
            "here: use --device cpu (or auto)"
        )
    return device


def on_gpu(device: str) -> bool:
    """Whether ``device`` names a GPU (``auto``: where torch sees one)."""
    if device == "auto":
        import torch

        return bool(torch.cuda.is_available())
    return device.startswith("cuda")
