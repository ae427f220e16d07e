"""The conventions herkit finds in each env it ships or supports, as a markdown table.

    python benchmarks/conventions.py        # prints the table of docs/experiment-log.md

For each env: the reward range Q targets are clipped to, where success is read, whether
episodes end on success, and the reward scale that follows (``herkit.buffer.conventions``).
"""

from __future__ import annotations

import contextlib
import dataclasses

from common import parser

from herkit.agents.base import ValueScale
from herkit.config.resolve import preset_config
from herkit.envs import HERKIT_IDS
from herkit.training.build import resolve_conventions

ENVS: list[tuple[str, tuple[str, ...]]] = [
    *[(env_id, ()) for env_id in HERKIT_IDS],
    ("FetchReach-v4", ()),
    ("FetchPush-v4", ()),
    ("FetchReachDense-v4", ()),
    ("PointMaze_UMaze-v3", ("continuing_task=False", "max_episode_steps=100")),
    ("PointMaze_UMaze-v3", ("continuing_task=True",)),
    ("PointMaze_UMazeDense-v3", ("continuing_task=False",)),
]


def main() -> None:
    """Print the table."""
    parser(__doc__).parse_args()
    print("| env | env kwargs | reward range | success from | ends on success | reward scale |")
    print("|---|---|---|---|---|---:|")
    for env_id, kwargs in ENVS:
        config = dataclasses.replace(preset_config(env_id), env_kwargs=kwargs)
        try:
            _, found = resolve_conventions(config)
        except ValueError as error:  # gymnasium-robotics missing
            print(f"<!-- {env_id}: {error} -->")
            continue
        rewards = (
            "not bounded"
            if found.reward_range is None
            else "[{:g}, {:g}]".format(*found.reward_range)
        )
        ends = {None: "not seen yet", True: "yes", False: "no"}[found.terminal_on_success]
        with contextlib.suppress(KeyError):
            how = found.sources["terminal_on_success"].split(":")[0].replace("declared by ", "")
            ends = f"{ends} ({how})"
        gamma = config.agent_config().gamma
        scale = ValueScale.of(found.reward_range, gamma, bool(found.terminal_on_success)).scale
        print(
            f"| {env_id} | {' '.join(kwargs) or '-'} | {rewards} | {found.success_key} | "
            f"{ends} | {scale:g} |"
        )


if __name__ == "__main__":
    main()
