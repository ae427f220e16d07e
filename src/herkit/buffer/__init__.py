"""The Hindsight Experience Replay buffer and its parts."""

from herkit.buffer.batch import Batch
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.settings import Strategy

__all__ = ["Batch", "HerReplayBuffer", "Strategy"]
