"""herkit: Hindsight Experience Replay for goal-conditioned reinforcement learning."""

from herkit.buffer import Batch, HerReplayBuffer, Strategy

__all__ = ["Batch", "HerReplayBuffer", "Strategy"]
__version__ = "0.1.0"
