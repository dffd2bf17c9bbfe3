"""Python peers of `embodia bench export-latency`: batch-1 latency of the same exported
model.onnx in onnxruntime (one thread, sequential) and of the same network in PyTorch (eager,
inference mode, one thread), timed per call like embodia's rows; then one table with embodia's
figures (its --json output) and the ratios to embodia's forward pass.

Usage: python export_latency.py MODEL.onnx EMBODIA.json   (run by bench/export_latency.sh)"""

import json
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

WARMUP = 1000
ROWS = 1000


def timed(name, calls, call):
    for i in range(WARMUP):
        call(i)
    us = np.empty(calls)
    for i in range(calls):
        t = time.perf_counter_ns()
        call(i)
        us[i] = (time.perf_counter_ns() - t) / 1e3
    return {"name": name, "median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99))}


def torch_policy(model):
    """The exported graph (normalizer, Gemm layers, activation, clip head) as PyTorch ops."""
    init = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    ops = [n.op_type for n in model.graph.node]
    assert "Max" in ops and "Min" in ops, "only the clip head (the benchmark's policy) is replicated"
    act = {"Elu": torch.nn.functional.elu, "Tanh": torch.tanh, "Relu": torch.relu}[
        next(op for op in ops if op in ("Elu", "Tanh", "Relu"))
    ]
    layers = [(init[f"layer{i}.weight"], init[f"layer{i}.bias"]) for i in range(ops.count("Gemm"))]
    mean, std, lo, hi = init["obs_mean"], init["obs_std"], init["obs_clip_low"], init["obs_clip_high"]
    low, high = init["action_low"], init["action_high"]

    def forward(x):
        x = ((x - mean) / std).clamp(lo, hi)
        for i, (w, b) in enumerate(layers):
            x = torch.addmm(b, x, w)
            if i < len(layers) - 1:
                x = act(x)
        return torch.minimum(torch.maximum(x, low), high)

    return forward


def main() -> None:
    model_path, embodia_json = sys.argv[1:3]
    ours = json.load(open(embodia_json))
    calls = ours["calls"]
    torch.set_num_threads(1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    obs_dim = session.get_inputs()[0].shape[1]
    obs = np.random.default_rng(1).uniform(-10, 10, size=(ROWS, obs_dim)).astype(np.float32)
    rows = [obs[i : i + 1] for i in range(ROWS)]
    forward = torch_policy(onnx.load(model_path))
    torch_rows = [torch.from_numpy(r) for r in rows]
    with torch.inference_mode():
        same = np.abs(forward(torch.from_numpy(obs)).numpy() - session.run(None, {name: obs})[0]).max()
        assert same <= 1e-5, f"the PyTorch replica differs from onnxruntime by {same}"
        peers = [
            timed(f"onnxruntime {ort.__version__} (Python)", calls, lambda i: session.run(None, {name: rows[i % ROWS]})),
            timed(f"PyTorch {torch.__version__.split('+')[0]} (Python)", calls, lambda i: forward(torch_rows[i % ROWS])),
        ]
    results = ours["results"] + peers
    base = ours["results"][0]["median_us"]
    print(f"batch-1 latency of a {ours['layers']} MLP policy, {calls} calls each, µs per call")
    print(f"{'implementation':<32} {'median':>9} {'p99':>9} {'median / embodia':>17}")
    for r in results:
        print(f"{r['name']:<32} {r['median_us']:>9.2f} {r['p99_us']:>9.2f} {r['median_us'] / base:>17.2f}")
    for s in ours["skipped"]:
        print(f"not measured: {s}")


if __name__ == "__main__":
    main()
