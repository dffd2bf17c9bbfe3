"""Summarize an .rrd recording with the rerun SDK itself (rerun-sdk, pinned to embodia's SDK).

Usage: python rrd_dump.py FILE.rrd [ENTITY STEP]

Prints one JSON object: for every entity path its row count, whether it is static, its
timelines and components, and the distinct `env_step` values it has; with ENTITY and STEP also
the Transform3D translation and quaternion logged at that entity for `env_step == STEP`.
tests/viz.rs runs it on a recording that `embodia eval --record-episodes` wrote.
"""

import json
import sys

from rerun.experimental import RrdReader


def main() -> None:
    path = sys.argv[1]
    entity = sys.argv[2] if len(sys.argv) > 2 else None
    step = int(sys.argv[3]) if len(sys.argv) > 3 else None
    entities: dict[str, dict] = {}
    transform = None
    for chunk in RrdReader(path).stream():
        name = str(chunk.entity_path)
        e = entities.setdefault(name, {"rows": 0, "static": True, "timelines": set(), "components": set(), "steps": set()})
        e["rows"] += chunk.num_rows
        e["static"] = e["static"] and chunk.is_static
        batch = chunk.to_record_batch()
        names = batch.schema.names
        e["timelines"].update(t for t in chunk.timeline_names)
        e["components"].update(n for n in names if ":" in n)
        if "env_step" in names:
            steps = batch.column("env_step").to_pylist()
            e["steps"].update(steps)
            if name == entity and step in steps:
                i = steps.index(step)
                transform = {
                    c.split(":")[1]: batch.column(c).to_pylist()[i]
                    for c in ("Transform3D:translation", "Transform3D:quaternion")
                    if c in names
                }
    out = {
        "entities": {
            k: {
                "rows": v["rows"],
                "static": v["static"],
                "timelines": sorted(v["timelines"]),
                "components": sorted(v["components"]),
                "num_steps": len(v["steps"]),
                "max_step": max(v["steps"]) if v["steps"] else None,
            }
            for k, v in sorted(entities.items())
        },
        "transform": transform,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
