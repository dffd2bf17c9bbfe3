"""ONNX export check: onnxruntime (Python) runs embodia's exported model.onnx on 1,000 random raw
observations and must reproduce the actions embodia's own policy takes (`embodia act`, the
deterministic action `embodia eval` uses) within 1e-5 relative to max(1, |action|), with the
whole set as one batch and row by row at batch 1 (the batch dimension is dynamic).

Usage: python onnx_check.py EMBODIA_BINARY NAME RUN_DIR MODEL.onnx   (prints `ok NAME ...` or
raises)."""

import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

SAMPLES = 1000
TOLERANCE = 1e-5


def main() -> None:
    embodia, name, run, model = sys.argv[1:5]
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    [inp], [out] = session.get_inputs(), session.get_outputs()
    assert inp.shape[0] == "batch" and out.shape[0] == "batch", f"batch is not dynamic: {inp.shape}, {out.shape}"
    obs_dim = inp.shape[1]
    # Wide enough that the observation normalizer's clip and the action bounds both bite.
    obs = np.random.default_rng(7).uniform(-10.0, 10.0, size=(SAMPLES, obs_dim)).astype(np.float32)
    with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
        np.savetxt(f, obs, delimiter=",", fmt="%.9g")
        f.flush()
        text = subprocess.run([embodia, "act", "--run", run, "--obs", f.name], check=True, capture_output=True, text=True).stdout
    want = np.array([[float(v) for v in line.split(",")] for line in text.splitlines()], dtype=np.float32)
    assert want.shape == (SAMPLES, out.shape[1]), f"embodia act printed {want.shape}"
    assert np.abs(want).max() > 1e-3, "the reference actions are all ~0: the comparison would be weak"
    batched = session.run(None, {inp.name: obs})[0]
    single = np.concatenate([session.run(None, {inp.name: obs[i : i + 1]})[0] for i in range(SAMPLES)])
    for what, got in [("batch 1000", batched), ("batch 1", single)]:
        err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
        worst = int(err.argmax())
        assert err.max() <= TOLERANCE, (
            f"{name} ({what}): action {worst}: onnxruntime {got.flat[worst]} vs embodia {want.flat[worst]}"
        )
    print(f"ok {name}: {SAMPLES} observations, max relative difference {err.max():.2e} (onnxruntime {ort.__version__})")


if __name__ == "__main__":
    main()
