"""gymnasium compatibility of embodia's environments: the checkers, autoreset, seeding, the
vector API and what crosses the boundary."""

import sys
import threading
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import embodia


@pytest.mark.parametrize("task", embodia.tasks())
def test_every_task_passes_gymnasiums_check_env(task):
    with warnings.catch_warnings():
        # Unbounded observation boxes and unnormalized action ranges are warnings, not errors.
        warnings.simplefilter("ignore")
        check_env(embodia.make(task), skip_render_check=True)


def test_a_task_with_cameras_passes_check_env_with_uint8_images():
    env = embodia.make("pick-cube", camera_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"state", "front", "wrist"}
    assert obs["front"].dtype == np.uint8 and obs["front"].shape == (32, 32, 3)
    assert obs["front"].std() > 0, "a camera image of the scene is not blank"


def test_vector_env_spaces_and_batches_match_the_single_environment():
    envs = embodia.make_vec("reach", num_envs=5, seed=3)
    single = embodia.make("reach")
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.single_observation_space == single.observation_space
    assert envs.single_action_space == single.action_space
    assert envs.observation_space.shape == (5, *single.observation_space.shape)
    obs, _ = envs.reset()
    assert obs in envs.observation_space and obs.dtype == np.float32
    envs.action_space.seed(0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    assert obs.shape == (5, single.observation_space.shape[0])
    assert reward.shape == (5,) and reward.dtype == np.float32
    assert terminated.dtype == bool and truncated.dtype == bool
    assert info["success"].dtype == bool and info["success"].shape == (5,)


def test_a_seeded_reset_replays_the_same_rollout_and_seeds_differ():
    envs = embodia.make_vec("pick-cube", num_envs=3)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, envs.action_space.shape).astype(np.float32) for _ in range(30)]

    def rollout(seed):
        obs, _ = envs.reset(seed=seed)
        out = [obs]
        for a in actions:
            out.append(envs.step(a)[0])
        return np.stack(out)

    first = rollout(4)
    rollout(5)
    assert np.array_equal(rollout(4), first)
    assert not np.array_equal(rollout(5), first)


def test_same_step_autoreset_returns_the_next_episode_and_keeps_the_final_observation():
    # Pendulum episodes end at the time limit (200 steps), all three environments at once.
    envs = embodia.make_vec("pendulum", num_envs=3, seed=0)
    obs, _ = envs.reset()
    zeros = np.zeros((3, 1), dtype=np.float32)
    rewards = np.zeros(3)
    for step in range(200):
        previous = obs
        obs, reward, terminated, truncated, info = envs.step(zeros)
        rewards += reward
        if step < 199:
            assert not truncated.any() and not info["_final_obs"].any()
    assert truncated.all() and not terminated.any()
    assert info["_final_obs"].all() and info["_episode"].all()
    assert np.array_equal(info["episode"]["l"], [200, 200, 200])
    np.testing.assert_allclose(info["episode"]["r"], rewards, rtol=1e-4)
    # The final observation continues the episode (a small pendulum step from the previous
    # one); the returned observation starts a new episode, continued by the next step.
    assert np.abs(info["final_obs"] - previous).max() < 1.0
    assert not np.allclose(info["final_obs"], obs)
    obs2, *_ , info2 = envs.step(zeros)
    assert not info2["_final_obs"].any()
    assert np.abs(obs2 - obs).max() < 1.0


def test_the_single_environment_returns_the_terminal_observation_and_asks_for_a_reset():
    env = embodia.make("pendulum", seed=2)
    env.reset()
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(np.zeros(1, dtype=np.float32))
    assert truncated and not terminated and "success" in info
    assert obs.shape == (3,)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(1, dtype=np.float32))
    env.reset()
    env.step(np.zeros(1, dtype=np.float32))


def test_gymnasium_vector_wrappers_run_on_the_vector_env():
    # (Wrappers that need next-step autoreset, such as NormalizeObservation, refuse this mode.)
    envs = gym.wrappers.vector.ClipAction(
        gym.wrappers.vector.TransformReward(embodia.make_vec("reach", 4), lambda r: 2 * r)
    )
    raw = embodia.make_vec("reach", 4)
    envs.reset(seed=0)
    raw.reset(seed=0)
    _, reward, *_ = envs.step(np.full((4, 6), 5.0, dtype=np.float32))
    _, raw_reward, *_ = raw.step(np.ones((4, 6), dtype=np.float32))
    np.testing.assert_array_equal(reward, 2 * raw_reward)


def test_camera_images_cross_as_uint8_batches():
    envs = embodia.make_vec("pick-cube", num_envs=2, camera_size=24)
    obs, _ = envs.reset(seed=0)
    assert obs["front"].shape == (2, 24, 24, 3) and obs["front"].dtype == np.uint8
    assert obs in envs.observation_space
    obs, *_ = envs.step(np.zeros((2, envs.single_action_space.shape[0]), dtype=np.float32))
    assert obs["wrist"].shape == (2, 24, 24, 3)


def test_language_tasks_give_each_environment_its_instruction():
    envs = embodia.make_vec("lang-cubes", num_envs=4, seed=0)
    _, info = envs.reset()
    assert len(info["instruction"]) == 4 and all(isinstance(s, str) and s for s in info["instruction"])


def test_expert_actions_solve_reach():
    envs = embodia.make_vec("reach", num_envs=8, seed=0)
    envs.reset()
    successes = np.zeros(8, dtype=bool)
    for _ in range(envs.core.max_episode_steps):
        _, _, terminated, truncated, info = envs.step(embodia.expert(envs))
        successes |= info["success"]
        if (terminated | truncated).all():
            break
    assert successes.mean() >= 0.75


def test_tensor_only_tasks_run_on_the_cpu():
    envs = embodia.make_vec("cartpole-swingup", num_envs=16, seed=0)
    obs, _ = envs.reset()
    obs2, reward, *_ = envs.step(np.zeros((16, 1), dtype=np.float32))
    assert obs.shape == (16, envs.single_observation_space.shape[0]) and np.isfinite(reward).all()
    assert not np.array_equal(obs, obs2)


def test_config_takes_set_keys_and_changes_the_environment():
    envs = embodia.make_vec("reach", num_envs=2, config={"env.episode_steps": 7})
    assert envs.core.max_episode_steps == 7
    envs.reset(seed=0)
    for _ in range(7):
        *_, truncated, info = envs.step(np.zeros((2, 6), dtype=np.float32))
    assert truncated.all()


def test_step_releases_the_gil_while_the_worlds_step():
    # With a switch interval of 0.5 s the main thread does not hand the GIL over by itself
    # within the ~50 ms of these steps: the counting thread can only run while `step` has
    # released it.
    envs = embodia.make_vec("ant-run", num_envs=8, seed=0)
    envs.reset()
    actions = np.zeros((8, 8), dtype=np.float32)
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1
            time.sleep(0)  # gives the GIL back

    old = sys.getswitchinterval()
    thread = threading.Thread(target=counter)
    thread.start()
    try:
        sys.setswitchinterval(0.5)
        before = count[0]
        for _ in range(20):
            envs.step(actions)
        during = count[0] - before
    finally:
        sys.setswitchinterval(old)
        stop.set()
        thread.join()
    assert during > 0


# Bad input: each raises a Python exception naming the problem; none crashes the interpreter.


def test_an_unknown_task_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match="unknown task `nope`; valid tasks: pendulum"):
        embodia.make_vec("nope")


def test_an_unknown_config_key_is_refused_by_name():
    with pytest.raises(ValueError, match="env.no_such_key"):
        embodia.make_vec("reach", config={"env.no_such_key": 1})
    with pytest.raises(ValueError, match="does not configure an environment"):
        embodia.make_vec("reach", config={"algo.learning_rate": 0.1})
    with pytest.raises(ValueError, match="episode_steps"):
        embodia.make_vec("reach", config={"env.episode_steps": "long"})


def test_wrong_actions_are_refused_and_change_nothing():
    envs = embodia.make_vec("reach", num_envs=2, seed=0)
    obs, _ = envs.reset()
    with pytest.raises(ValueError, match=r"shape \(2, 5\); expected \(2, 6\)"):
        envs.step(np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(TypeError, match="dtype <U1"):
        envs.step(np.full((2, 6), "a"))
    bad = np.zeros((2, 6), dtype=np.float32)
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"actions\[1, 3\] is not finite"):
        envs.step(bad)
    with pytest.raises(TypeError, match="float32 numpy array"):
        envs.core.step([[0.0] * 6] * 2)
    assert np.array_equal(envs.core.obs(), obs), "a refused step changed the environments"
    # float64 and integer actions are converted.
    envs.step(np.zeros((2, 6)))
    envs.step(np.zeros((2, 6), dtype=np.int64))


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="num_envs"):
        embodia.make_vec("reach", num_envs=0)
    with pytest.raises(ValueError, match="seed"):
        embodia.make_vec("reach", seed=-1)
    with pytest.raises(ValueError, match="camera_size 4 is out of range"):
        embodia.make_vec("reach", camera_size=4)
    with pytest.raises(ValueError, match="no scene for cameras"):
        embodia.make_vec("pendulum", camera_size=32)
    with pytest.raises(ValueError, match="has no scripted expert"):
        embodia.expert(embodia.make_vec("pendulum", num_envs=1))
