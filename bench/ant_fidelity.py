"""MuJoCo side of bench/ant_fidelity.sh: replays embodia's open-loop ant sequences in
gymnasium's Ant-v5 and compares the trajectories.

Reads the JSON of `sim/examples/ant_trajectory.rs` on stdin. For each sequence (`zero`, `gentle`, `sine`)
it starts Ant-v5 from embodia's initial state (torso at 0.75 m, level, at rest; joints at zero
clamped into their limits, which is where embodia starts; MuJoCo's own reset leaves the ankles
at 0, outside their 30-70 degree range), applies the same actions (embodia's URDF joint order
hip_1, ankle_1, ..., hip_4, ankle_4 mapped onto Ant-v5's actuator order), and records the torso
position and joint angles after every env step (5 physics steps of 0.01 s, RK4).

It prints, per solver iteration count and sequence, the RMS and final difference between
embodia and MuJoCo in torso height, torso horizontal position and joint angles over the 3 s.
"""

import json
import sys

import gymnasium
import numpy as np

URDF_ORDER = ["hip_1", "ankle_1", "hip_2", "ankle_2", "hip_3", "ankle_3", "hip_4", "ankle_4"]


def mujoco_trajectory(actions, env):
    model, data = env.unwrapped.model, env.unwrapped.data
    env.reset(seed=0)
    qpos = env.unwrapped.init_qpos.copy()
    qvel = np.zeros(model.nv)
    joint_adr = [model.jnt_qposadr[model.joint(n).id] for n in URDF_ORDER]
    for n, adr in zip(URDF_ORDER, joint_adr):
        lo, hi = model.jnt_range[model.joint(n).id]
        qpos[adr] = np.clip(0.0, lo, hi)
    env.unwrapped.set_state(qpos, qvel)
    actuator_joint = [model.joint(model.actuator_trnid[i][0]).name for i in range(model.nu)]
    order = [URDF_ORDER.index(n) for n in actuator_joint]
    torso, joints = [], []
    for a in actions:
        env.step(np.asarray(a, dtype=np.float64)[order])
        torso.append(data.qpos[:3].copy())
        joints.append(data.qpos[joint_adr].copy())
    return np.array(torso), np.array(joints)


def main():
    rust = json.load(sys.stdin)
    steps, dt = rust["steps"], rust["control_dt"]
    actions = {
        name: [amplitude * np.sin(2 * np.pi * k * dt + np.arange(8) * np.pi / 4) for k in range(steps)]
        for name, amplitude in [("zero", 0.0), ("gentle", 0.2), ("sine", 0.6)]
    }
    env = gymnasium.make("Ant-v5", reset_noise_scale=0.0, terminate_when_unhealthy=False)
    reference = {name: mujoco_trajectory(acts, env) for name, acts in actions.items()}
    for name, (torso, joints) in reference.items():
        print(f"mujoco {name}: final torso x {torso[-1, 0]:+.3f} y {torso[-1, 1]:+.3f} z {torso[-1, 2]:.3f} m")
    print("solver_iterations sequence  torso z RMS / final (m)  torso xy RMS / final (m)  joints RMS / final (rad)")
    for run in rust["runs"]:
        torso_m, joints_m = reference[run["sequence"]]
        torso, joints = np.array(run["torso"]), np.array(run["joints"])
        dz = torso[:, 2] - torso_m[:, 2]
        dxy = np.linalg.norm(torso[:, :2] - torso_m[:, :2], axis=1)
        dq = np.sqrt(np.mean((joints - joints_m) ** 2, axis=1))
        rms = lambda d: float(np.sqrt(np.mean(d**2)))  # noqa: E731
        print(
            f"{run['solver_iterations']:>17} {run['sequence']:<9} {rms(dz):>12.4f} / {abs(dz[-1]):.4f}"
            f"  {rms(dxy):>14.4f} / {dxy[-1]:.4f}  {rms(dq):>13.4f} / {dq[-1]:.4f}"
            f"   (embodia final torso x {torso[-1, 0]:+.3f} y {torso[-1, 1]:+.3f} z {torso[-1, 2]:.3f})"
        )


if __name__ == "__main__":
    main()
