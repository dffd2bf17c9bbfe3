"""Writes a small dataset the way LeRobot v3.0's writer does (HF datasets for the frames,
pandas for the task table, pyarrow for the episode table with per-episode `stats/` columns,
json for info/stats), for `embodia dataset info` to read: the other direction of
bench/dataset_check.py. Two episodes of 5 and 7 frames, 4-D state, 2-D action, no
next.reward/next.success (like a teleoperated LeRobot recording), feature names as a dict.

Usage: bench/.venv-data/bin/python bench/lerobot_like.py OUT_DIR
"""

import json
import sys
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

root = Path(sys.argv[1])
(root / "meta/episodes/chunk-000").mkdir(parents=True)
(root / "data/chunk-000").mkdir(parents=True)
fps, lengths, od, ad = 30, [5, 7], 4, 2
features = {
    "observation.state": {"dtype": "float32", "shape": [od], "names": {"motors": [f"m{i}" for i in range(od)]}},
    "action": {"dtype": "float32", "shape": [ad], "names": {"motors": ["a0", "a1"]}},
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
rows = {k: [] for k in features}
rng = np.random.default_rng(0)
for e, n in enumerate(lengths):
    for t in range(n):
        rows["observation.state"].append(rng.normal(size=od).astype(np.float32))
        rows["action"].append(rng.normal(size=ad).astype(np.float32))
        rows["timestamp"].append(np.float32(t / fps))
        rows["frame_index"].append(t)
        rows["episode_index"].append(e)
        rows["index"].append(len(rows["index"]))
        rows["task_index"].append(0)
hf_features = datasets.Features(
    {
        k: datasets.Value(ft["dtype"]) if ft["shape"] == [1] else datasets.Sequence(length=ft["shape"][0], feature=datasets.Value(ft["dtype"]))
        for k, ft in features.items()
    }
)
datasets.Dataset.from_dict(rows, features=hf_features).to_parquet(root / "data/chunk-000/file-000.parquet")

tasks = pd.DataFrame({"task_index": [0]}, index=pd.Index(["Pick up the cube."], name="task"))
tasks.to_parquet(root / "meta/tasks.parquet")

state = np.stack(rows["observation.state"])
action = np.stack(rows["action"])
episodes, start = {}, 0
for e, n in enumerate(lengths):
    ep = {
        "episode_index": e, "tasks": ["Pick up the cube."], "length": n,
        "data/chunk_index": 0, "data/file_index": 0,
        "dataset_from_index": start, "dataset_to_index": start + n,
        "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0,
        "stats/action/mean": action[start:start + n].mean(0).tolist(),
    }
    for k, v in ep.items():
        episodes.setdefault(k, []).append(v)
    start += n
pq.write_table(pa.Table.from_pydict(episodes), root / "meta/episodes/chunk-000/file-000.parquet", compression="snappy")

stats = {
    name: {"min": v.min(0).tolist(), "max": v.max(0).tolist(), "mean": v.mean(0).tolist(), "std": v.std(0).tolist(),
           "count": [len(v)], "q01": v.min(0).tolist()}
    for name, v in [("observation.state", state), ("action", action)]
}
(root / "meta/stats.json").write_text(json.dumps(stats, indent=4))
info = {
    "codebase_version": "v3.0", "robot_type": "so101_follower", "total_episodes": len(lengths),
    "total_frames": sum(lengths), "total_tasks": 1, "chunks_size": 1000, "data_files_size_in_mb": 100,
    "video_files_size_in_mb": 200, "fps": fps, "splits": {"train": f"0:{len(lengths)}"},
    "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
    "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
    "features": features,
}
(root / "meta/info.json").write_text(json.dumps(info, indent=4))
print(f"wrote {root}: {len(lengths)} episodes, {sum(lengths)} frames")
