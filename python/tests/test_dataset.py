"""Datasets recorded by the CLI read in Python; datasets written in Python read back."""

import json
from pathlib import Path

import numpy as np
import pytest

import embodia
from conftest import run_cli


def test_a_dataset_recorded_by_the_cli_reads_with_its_episode_and_frame_counts(tmp_path, embodia_bin):
    out = tmp_path / "reach-demos"
    run_cli(embodia_bin, "record", "--task", "reach", "--episodes", "5", "--seed", "3", "--out", str(out))
    data = embodia.dataset.read(out)
    info = json.loads((out / "meta" / "info.json").read_text())
    assert data.num_episodes == info["total_episodes"] == 5
    assert data.num_frames == info["total_frames"] > 5
    assert data.task == "reach" and data.obs_dim == 24 and data.action_dim == 6
    frames = data.frames()
    assert frames["observation.state"].shape == (data.num_frames, 24)
    assert frames["episode_index"][-1] == 4 and frames["next.success"].sum() == sum(e.success for e in data.episodes)
    # The scripted expert succeeds at reach, and the recorded actions are what it did.
    assert all(e.success for e in data.episodes)
    assert np.isfinite(frames["action"]).all()


def test_a_dataset_written_in_python_reads_back_equal(tmp_path):
    rng = np.random.default_rng(1)
    episodes = [
        embodia.dataset.Episode(
            observations=rng.normal(size=(n, 4)).astype(np.float32),
            actions=rng.uniform(-1, 1, size=(n, 2)).astype(np.float32),
            rewards=rng.normal(size=n).astype(np.float32),
            success=n == 7,
            terminated=n == 7,
        )
        for n in (7, 12)
    ]
    assert embodia.dataset.write(tmp_path / "d", "reach", 30.0, episodes) == 19
    back = embodia.dataset.read(tmp_path / "d")
    assert back.num_episodes == 2 and back.fps == 30.0
    for a, b in zip(episodes, back.episodes):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        assert (a.success, a.terminated) == (b.success, b.terminated)


def test_writing_never_replaces_what_is_not_a_dataset(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    episode = embodia.dataset.Episode(np.zeros((3, 2), np.float32), np.zeros((3, 1), np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="not a dataset"):
        embodia.dataset.write(tmp_path / "notes", "reach", 10, [episode], overwrite=True)
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    with pytest.raises(ValueError, match=r"episodes\[0\]\[\"actions\"\] has shape"):
        bad = embodia.dataset.Episode(np.zeros((3, 2), np.float32), np.zeros((4, 1), np.float32), np.zeros(3, np.float32))
        embodia.dataset.write(tmp_path / "new", "reach", 10, [bad])


def test_reading_a_missing_or_malformed_dataset_names_the_file(tmp_path):
    with pytest.raises(OSError, match="info.json"):
        embodia.dataset.read(tmp_path / "missing")
    (tmp_path / "bad" / "meta").mkdir(parents=True)
    (tmp_path / "bad" / "meta" / "info.json").write_text("{ not json")
    with pytest.raises(ValueError, match="info.json"):
        embodia.dataset.read(tmp_path / "bad")


def test_a_parquet_file_that_makes_the_reader_panic_is_one_error_and_prints_nothing(tmp_path, embodia_bin, capfd):
    out = tmp_path / "corrupt"
    run_cli(embodia_bin, "record", "--task", "reach", "--episodes", "1", "--out", str(out))
    data_file = out / "data" / "chunk-000" / "file-000.parquet"
    corrupt = Path(__file__).resolve().parents[2] / "dataset" / "tests" / "data" / "arrow-schema-panic.parquet"
    data_file.write_bytes(corrupt.read_bytes())
    capfd.readouterr()
    with pytest.raises(ValueError, match="corrupt file"):
        embodia.dataset.read(out)
    assert "panicked" not in capfd.readouterr().err
