"""herkit's goal draws against OGBench's own ``GCDataset``: the same dataset, every feature tested.

On a tagged dataset (each state says its episode and its step), herkit's
``HerReplayBuffer.from_dataset`` and OGBench's ``GCDataset`` (its own code, from the
``impls/`` folder given) each draw value goals (0.2 the state itself, 0.5 later in its
episode, 0.3 any state) and actor goals (later in its episode) with OGBench's GCIVL and
GCIQL settings; each feature of the samples (where the goal lies, the episode's length and
end, the rewards) is compared by a chi-square test of homogeneity, into offline_goals.json.

    python benchmarks/offline.py goals --ogbench OGBENCH/impls --label herkit --record
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
from pathlib import Path

import numpy as np
from common import DOCS, add_run, code_version, machine

GOALS_RECORD = DOCS / "offline_goals.json"


OGBENCH_CONFIG = {
    "discount": 0.99,
    "value_p_curgoal": 0.2,
    "value_p_trajgoal": 0.5,
    "value_p_randomgoal": 0.3,
    "value_geom_sample": True,
    "actor_p_curgoal": 0.0,
    "actor_p_trajgoal": 1.0,
    "actor_p_randomgoal": 0.0,
    "actor_geom_sample": False,
    "gc_negative": True,
    "p_aug": None,
    "frame_stack": None,
}
"""The goal settings of OGBench's GCIVL and GCIQL (``impls/agents/gcivl.py``, ``gciql.py``)."""


def tagged_dataset(episodes: int, seed: int) -> dict[str, np.ndarray]:
    """OGBench arrays of ``episodes`` episodes of 2 to 40 states ``(episode, row)``."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(2, 41, size=episodes)
    observations = np.concatenate(
        [np.stack([np.full(n, e), np.arange(n)], 1) for e, n in enumerate(rows)]
    ).astype(np.float32)
    terminals = np.zeros(len(observations), bool)
    terminals[np.cumsum(rows) - 1] = True
    actions = rng.uniform(-1, 1, size=(len(observations), 2)).astype(np.float32)
    return {"observations": observations, "actions": actions, "terminals": terminals}


def goal_features(
    obs: np.ndarray, goal: np.ndarray, reward: np.ndarray, rows: np.ndarray
) -> dict[str, np.ndarray]:
    """Categorical features of samples of a tagged dataset: where the sample and its goal
    lie in their episodes, and the rewards."""
    episode, t = obs[:, 0].astype(int), obs[:, 1].astype(int)
    last = rows[episode] - 2  # the last state with a transition
    same = goal[:, 0].astype(int) == episode
    offset = np.where(same, np.clip(goal[:, 1].astype(int) - t, -1, 41), 42)
    return {
        "sample: steps to the episode's end": np.clip(last - t, 0, 40),
        "sample: episode length": rows[episode],
        "goal: offset (42: another episode)": offset,
        "goal: at the episode's last transition's state": same & (goal[:, 1] == last),
        "reward": reward.astype(int),
        "reward at an episode's last transition": np.where(t == last, reward.astype(int), 1),
    }


def compare_goals(args: argparse.Namespace) -> None:
    """herkit's value and actor goals against OGBench's ``GCDataset`` (``--ogbench``) on a
    tagged dataset, each feature by a chi-square test of homogeneity."""
    from scipy.stats import chi2_contingency

    from herkit import HerReplayBuffer

    spec = importlib.util.spec_from_file_location(
        "ogbench_datasets", Path(args.ogbench) / "utils" / "datasets.py"
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no OGBench utils/datasets.py under {args.ogbench}")
    ogbench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ogbench)  # OGBench's own code: its Dataset and GCDataset
    import ogbench.utils as ogbench_utils  # its loader, as its main.py loads a dataset

    arrays = tagged_dataset(args.episodes, args.seed)
    rows = np.diff(np.concatenate([[0], np.flatnonzero(arrays["terminals"]) + 1]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tagged.npz"
        np.savez(path, **arrays)
        compact = ogbench_utils.load_dataset(str(path), compact_dataset=True)
        theirs_data = ogbench.GCDataset(ogbench.Dataset.create(**compact), OGBENCH_CONFIG)
        np.random.seed(args.seed)  # noqa: NPY002 (OGBench's GCDataset draws from numpy's global one)
        batch = theirs_data.sample(args.samples)
        ours = HerReplayBuffer.from_dataset(
            path,
            lambda a, d, i: np.zeros(len(a), np.float32),
            value_goals=(0.2, 0.5, 0.3),
            actor_goals=(0, 1, 0),
            gamma=OGBENCH_CONFIG["discount"],
            seed=args.seed,
        ).sample(args.samples)
    samples = {
        "value": (
            goal_features(batch["observations"], batch["value_goals"], batch["rewards"], rows),
            goal_features(ours.observation, ours.goal, ours.reward, rows),
        ),
        "actor": (
            goal_features(batch["observations"], batch["actor_goals"], batch["rewards"], rows),
            goal_features(ours.observation, ours.actor_goal, ours.reward, rows),
        ),
    }
    results = []
    for mix, (theirs, mine) in samples.items():
        for name in theirs:
            if mix == "actor" and name.startswith("reward"):
                continue
            a, b = theirs[name].astype(int), mine[name].astype(int)
            values = np.union1d(a, b)
            table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
            p = float(chi2_contingency(table)[1]) if len(values) > 1 else 1.0
            results.append({"goals": mix, "feature": name, "p": p, "categories": len(values)})
            print(f"{mix:5s} {name:50s} p = {p:.3g} ({len(values)} categories)")
    worst = min(result["p"] for result in results)
    verdict = "equal in distribution" if worst > args.alpha else "differ"
    print(
        f"lowest p = {worst:.3g}: herkit's and OGBench's goals {verdict} (significance "
        f"{args.alpha:g})"
    )
    run = {
        "samples": args.samples,
        "episodes": args.episodes,
        "seed": args.seed,
        "significance": args.alpha,
        "lowest_p": worst,
        "verdict": verdict,
        "features": results,
        **code_version(),
        "label": args.label,
        "command": f"python benchmarks/offline.py goals --ogbench OGBENCH/impls --samples "
        f"{args.samples} --seed {args.seed} --label {args.label} --record",
    }
    add_run(GOALS_RECORD, f"{args.label}/seed{args.seed}", run, machine())
