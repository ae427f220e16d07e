"""Writing a run's files so that a failed write (a full disk, a permission, a folder that
vanished) leaves nothing half-written and names its file.

:func:`write_text` and :func:`write_bytes` replace a file whole (a temporary file beside
it, then a rename; the temporary file is removed when the write fails); :func:`append_text`
adds to a file and cuts it back to its old size when the write fails, so a row is either
all there or not at all. Each re-raises the ``OSError`` with the path as its ``filename``
(``file.write`` errors carry none), and :func:`naming` does the same for writes made by
other libraries.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["append_text", "naming", "write_bytes", "write_text", "write_with"]


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an ``OSError`` raised in the ``with`` body ``path`` as its filename when it
    names none."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            error.filename = str(path)
        raise


def write_with(path: str | os.PathLike[str], write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` to write a temporary file beside ``path``, then rename it to
    ``path``; on failure remove the temporary file and raise the error naming ``path``."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with naming(path):
            write(tmp)
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8), whole or not at all."""
    write_with(path, lambda tmp: _write(tmp, "w", text, encoding="utf-8"))


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data``, whole or not at all."""
    write_with(path, lambda tmp: _write(tmp, "wb", data))


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` to ``path`` (created if absent); a failed write cuts the file back
    to its size before, so nothing half-written stays."""
    view = memoryview(text.encode("utf-8"))
    with naming(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                while view:
                    view = view[os.write(fd, view) :]
            except BaseException:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)


def _write(path: Path, mode: str, data: str | bytes, **kwargs: Any) -> None:
    file: IO[Any]
    with open(path, mode, **kwargs) as file:
        file.write(data)
