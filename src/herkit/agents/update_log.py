"""Every update's metrics kept on the device: :class:`UpdateLog`, a ring of rows (no host
read: a read per update makes a GPU wait on Python), read in one transfer per row of
``updates.csv``."""

from __future__ import annotations

import torch

__all__ = ["UpdateLog"]


class UpdateLog:
    """Rows of update metrics on ``device``, ``capacity`` of them between two reads.

    ``names`` fixes the columns (every metric the agent can report, in order). Past
    ``capacity`` rows without a read, the rows are moved to the host (one transfer) so
    that nothing is lost.
    """

    def __init__(self, names: tuple[str, ...], capacity: int, device: torch.device) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.names = names
        self.capacity = capacity
        self.rows = torch.zeros(capacity, len(names), dtype=torch.float32, device=device)
        self.cursor = torch.zeros(1, dtype=torch.int64, device=device)
        """The next row to write, on the device (a captured update advances it itself)."""
        self._present: list[tuple[str, ...]] = []
        self._taken: list[dict[str, float]] = []

    def write(self, values: torch.Tensor) -> None:
        """Write one update's ``values`` (one per name, 0 where absent) at the cursor and
        advance it (round the ``capacity`` rows); device work only. :meth:`note` follows
        on the host where the rows are kept."""
        self.rows.index_copy_(0, self.cursor, values.reshape(1, -1).float())
        self.cursor.add_(1).remainder_(self.capacity)

    def note(self, present: tuple[str, ...]) -> None:
        """Record on the host which metrics the row just written holds; moves the rows to
        the host first when they fill the log."""
        self._present.append(present)
        if len(self._present) == self.capacity:
            self._taken += self._read()

    def take(self) -> list[dict[str, float]]:
        """The metrics of every update since the last call, oldest first (one transfer)."""
        rows = self._taken + self._read()
        self._taken = []
        return rows

    def __len__(self) -> int:
        """Updates written since the last :meth:`take`."""
        return len(self._taken) + len(self._present)

    def clear(self) -> None:
        """Forget every row (kept or not) and start again at the first."""
        self.cursor.zero_()
        self._present = []
        self._taken = []

    def _read(self) -> list[dict[str, float]]:
        count = len(self._present)
        if count == 0:
            return []
        values = self.rows[:count].cpu().numpy()
        self.cursor.zero_()
        index = {name: i for i, name in enumerate(self.names)}
        rows = [
            {name: float(row[index[name]]) for name in present}
            for row, present in zip(values, self._present, strict=True)
        ]
        self._present = []
        return rows
