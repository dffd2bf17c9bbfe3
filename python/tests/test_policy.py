"""A policy trained with the CLI, loaded in Python, acts as `embodia act` prints."""

import numpy as np
import pytest

import embodia
from conftest import run_cli


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory, embodia_bin):
    run = tmp_path_factory.mktemp("runs") / "reach-ppo"
    run_cli(embodia_bin, "train", "--task", "reach", "--algo", "ppo", "--steps", "4096", "--quiet", "--run-dir", str(run))
    return run


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory, embodia_bin):
    run = tmp_path_factory.mktemp("runs") / "pendulum-sac"
    run_cli(embodia_bin, "train", "--task", "pendulum", "--algo", "sac", "--steps", "600", "--quiet", "--run-dir", str(run))
    return run


@pytest.mark.parametrize("which", ["ppo_run", "sac_run"])
def test_load_policy_reproduces_embodia_act_on_1000_observations(which, request, embodia_bin, tmp_path):
    run = request.getfixturevalue(which)
    policy = embodia.load_policy(run)
    rng = np.random.default_rng(0)
    obs = rng.normal(0, 1.5, size=(1000, policy.obs_dim)).astype(np.float32)
    path = tmp_path / "obs.txt"
    np.savetxt(path, obs, fmt="%r", delimiter=",")
    # %r of numpy float32 prints repr; write exactly what parses back to the same f32.
    path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in obs))
    printed = run_cli(embodia_bin, "act", "--run", str(run), "--obs", str(path))
    expected = np.array([[float(v) for v in line.split(",")] for line in printed.splitlines()], dtype=np.float32)
    actions = policy.act(obs)
    assert actions.shape == expected.shape == (1000, policy.chunk * policy.action_dim)
    np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-6)
    # One observation at a time gives the same actions as the batch.
    np.testing.assert_array_equal(policy.act(obs[7]), actions[7])


def test_a_trained_policy_acts_in_its_environment(ppo_run):
    policy = embodia.load_policy(ppo_run)
    envs = embodia.make_vec("reach", num_envs=4, seed=0)
    obs, _ = envs.reset()
    actions = policy.act(obs)
    low, high = envs.single_action_space.low, envs.single_action_space.high
    assert actions.shape == (4, 6) and (actions >= low).all() and (actions <= high).all()
    envs.step(actions)


def test_bad_policy_input_is_refused_by_name(ppo_run, tmp_path):
    policy = embodia.load_policy(ppo_run)
    with pytest.raises(ValueError, match="takes 24 values per observation"):
        policy.act(np.zeros((3, 5), dtype=np.float32))
    with pytest.raises(ValueError, match=r"obs\[1, 2\] is not finite"):
        bad = np.zeros((2, 24), dtype=np.float32)
        bad[1, 2] = np.inf
        policy.act(bad)
    with pytest.raises(TypeError, match="dtype"):
        policy.act(np.array([["x"] * 24]))
    with pytest.raises(OSError, match="is not a run directory"):
        embodia.load_policy(tmp_path)


def test_a_flow_policy_run_is_refused_with_the_reason(tmp_path_factory, embodia_bin):
    run = tmp_path_factory.mktemp("runs") / "reach-sft"
    run_cli(embodia_bin, "train", "--task", "reach", "--algo", "sft", "--demos", "2", "--steps", "20", "--quiet", "--run-dir", str(run))
    with pytest.raises(ValueError, match="multi-step flow policy.*distill"):
        embodia.load_policy(run)
