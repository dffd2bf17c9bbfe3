"""Checks an embodia dataset the way LeRobot (v3.0) loads one, with pyarrow, pandas and, when
installed, HF `datasets`: info.json fields, the frame schema against info.json's features,
the task table as a pandas frame indexed by `task`, the episode table, and stats.json.

Usage: bench/.venv-data/bin/python bench/dataset_check.py DATASET_DIR   (see bench/dataset_compat.sh)
Prints one line per check and `N passed, N failed`; exits 1 on any failure.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

root = Path(sys.argv[1])
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")


info = json.loads((root / "meta/info.json").read_text())
for key in ["codebase_version", "fps", "features", "data_path", "chunks_size", "total_episodes", "total_frames", "total_tasks"]:
    check(f"info.json has {key}", key in info)
check("codebase_version is v3.0", info["codebase_version"] == "v3.0", info["codebase_version"])
check("fps is an int", isinstance(info["fps"], int), repr(info["fps"]))

# Frames: every data file LeRobot would glob (data/*/*.parquet), schema per feature.
paths = sorted(root.glob("data/*/*.parquet"))
check("data files", len(paths) > 0, f"{len(paths)} files")
table = pa.concat_tables([pq.read_table(p) for p in paths])
check("total_frames matches rows", table.num_rows == info["total_frames"], f"{table.num_rows}")
for name, ft in info["features"].items():
    if name not in table.column_names:
        check(f"column {name}", False, "missing")
        continue
    t = table.schema.field(name).type
    shape, dtype = tuple(ft["shape"]), ft["dtype"]
    if shape == (1,):
        ok = t == pa.from_numpy_dtype(np.dtype(dtype))
    else:
        ok = pa.types.is_fixed_size_list(t) and t.list_size == shape[0] and t.value_type == pa.from_numpy_dtype(np.dtype(dtype))
    check(f"column {name} is {dtype}{list(shape)}", ok, str(t))

# The task table as LeRobot reads it: pd.read_parquet, index named `task`.
tasks = pd.read_parquet(root / "meta/tasks.parquet")
check("tasks index is `task`", tasks.index.name == "task", str(tasks.index.name))
check("tasks has task_index", "task_index" in tasks.columns, str(list(tasks.columns)))
first = tasks.index[0]
check("tasks.loc[task].task_index", int(tasks.loc[first].task_index) == 0, first)

# Episode table.
eps = pd.concat([pd.read_parquet(p) for p in sorted(root.glob("meta/episodes/*/*.parquet"))], ignore_index=True)
for c in ["episode_index", "tasks", "length", "data/chunk_index", "data/file_index", "dataset_from_index", "dataset_to_index"]:
    check(f"episodes column {c}", c in eps.columns)
check("total_episodes matches", len(eps) == info["total_episodes"], f"{len(eps)}")
check("lengths = to - from", bool(((eps.dataset_to_index - eps.dataset_from_index) == eps.length).all()))
ep_idx = table.column("episode_index").to_numpy()
counts = np.bincount(ep_idx, minlength=len(eps))
check("frames per episode = length", bool((counts[eps.episode_index] == eps.length).all()))
index = table.column("index").to_numpy()
check("index is 0..total_frames", bool((index == np.arange(len(index))).all()))

# Statistics against the data.
stats = json.loads((root / "meta/stats.json").read_text())
for name in ["observation.state", "action"]:
    col = np.stack(table.column(name).to_numpy(zero_copy_only=False)).astype(np.float64)
    s = stats[name]
    for stat, ref in [("mean", col.mean(0)), ("std", col.std(0)), ("min", col.min(0)), ("max", col.max(0))]:
        check(f"stats {name}.{stat}", np.allclose(s[stat], ref, rtol=1e-6, atol=1e-9))
    check(f"stats {name}.count", s["count"] == [len(col)], str(s["count"]))

# What LeRobot's load_nested_dataset does: Dataset.from_parquet with the features of info.json.
try:
    import datasets
except ImportError:
    print("skip HF datasets check (not installed)")
else:
    feats = {}
    for name, ft in info["features"].items():
        if tuple(ft["shape"]) == (1,):
            feats[name] = datasets.Value(dtype=ft["dtype"])
        else:
            feats[name] = datasets.Sequence(length=ft["shape"][0], feature=datasets.Value(dtype=ft["dtype"]))
    ds = datasets.Dataset.from_parquet([str(p) for p in paths], features=datasets.Features(feats))
    row = ds.with_format("numpy")[0]
    check("HF datasets loads with info.json features", len(ds) == info["total_frames"], f"{len(ds)} rows")
    check("HF row observation.state shape", row["observation.state"].shape == tuple(info["features"]["observation.state"]["shape"]))

failed = results.count(False)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
