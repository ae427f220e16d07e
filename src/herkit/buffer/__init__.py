"""The Hindsight Experience Replay buffer and its parts."""

from herkit.buffer.batch import Batch
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.strategies import Strategy

__all__ = ["Batch", "HerReplayBuffer", "Strategy"]
