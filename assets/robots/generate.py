#!/usr/bin/env python3
"""Generate the primitive-only URDF robot descriptions in this folder, and MJCF (.xml) versions
of so101, arm7, quadruped12 and ant from the same numbers (see to_mjcf).

    python3 assets/robots/generate.py          # rewrites the .urdf and .xml files
    python3 assets/robots/generate.py --check  # exits 1 if a file differs from what it would write

Standard library only. Every link's <inertial> is computed here from its collision primitives
(uniform density, or a given density): the mass of each primitive is proportional to its volume,
the tensor is combined about the link's centre of mass (parallel-axis theorem) and written in its
principal frame (diagonal ixx/iyy/izz, the frame's rotation in the inertial origin's rpy).

Frames: z up, x forward. Joint origins follow the sources named in each file's header. Shapes of the
Panda-like arm and the SO-101 are placed in world coordinates at the zero pose and converted to the
link frame, so their numbers can be read against the zero-pose drawing in the header.

Validate the result with assets/robots/check_urdf.py.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PI = math.pi
SQRT2 = math.sqrt(2.0)

# ---------------------------------------------------------------------------------------------
# small 3-D helpers (row-major 3x3 lists)


def mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def transpose(a):
    return [[a[j][i] for j in range(3)] for i in range(3)]


def add(u, v):
    return [u[i] + v[i] for i in range(3)]


def sub(u, v):
    return [u[i] - v[i] for i in range(3)]


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def rpy_to_mat(rpy):
    """R = Rz(yaw) * Ry(pitch) * Rx(roll), as URDF specifies."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]


def mat_to_rpy(m):
    """Inverse of rpy_to_mat (pitch in [-pi/2, pi/2])."""
    sp = -m[2][0]
    if abs(sp) > 1.0 - 1e-12:
        pitch = math.copysign(PI / 2, sp)
        roll = 0.0
        yaw = math.atan2(-m[0][1], m[1][1])
    else:
        pitch = math.asin(sp)
        roll = math.atan2(m[2][1], m[2][2])
        yaw = math.atan2(m[1][0], m[0][0])
    return [roll, pitch, yaw]


def rpy_z_onto(d):
    """rpy of a frame whose z axis points along direction d (roll 0)."""
    n = norm(d)
    dx, dy, dz = (x / n for x in d)
    return [0.0, math.acos(max(-1.0, min(1.0, dz))), math.atan2(dy, dx) if abs(dx) + abs(dy) > 1e-12 else 0.0]


def jacobi_eigen(a):
    """Eigen-decomposition of a symmetric 3x3 matrix: (values, V) with columns of V the vectors."""
    a = [row[:] for row in a]
    v = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    for _ in range(100):
        off = max(abs(a[0][1]), abs(a[0][2]), abs(a[1][2]))
        if off < 1e-18:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if abs(a[p][q]) < 1e-30:
                continue
            theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q])
            t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):
                akp, akq = a[k][p], a[k][q]
                a[k][p] = c * akp - s * akq
                a[k][q] = s * akp + c * akq
            for k in range(3):
                apk, aqk = a[p][k], a[q][k]
                a[p][k] = c * apk - s * aqk
                a[q][k] = s * apk + c * aqk
            for k in range(3):
                vkp, vkq = v[k][p], v[k][q]
                v[k][p] = c * vkp - s * vkq
                v[k][q] = s * vkp + c * vkq
    return [a[0][0], a[1][1], a[2][2]], v


# ---------------------------------------------------------------------------------------------
# primitives


@dataclass
class Shape:
    kind: str  # box | sphere | cylinder | capsule
    dims: tuple  # box (x, y, z); sphere (r,); cylinder/capsule (r, length)
    xyz: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    rpy: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    collide: bool = True  # False: visual only, carries no mass

    def volume(self):
        if self.kind == "box":
            x, y, z = self.dims
            return x * y * z
        if self.kind == "sphere":
            return 4.0 / 3.0 * PI * self.dims[0] ** 3
        r, h = self.dims
        if self.kind == "cylinder":
            return PI * r * r * h
        if self.kind == "capsule":
            return PI * r * r * h + 4.0 / 3.0 * PI * r**3
        raise ValueError(self.kind)

    def inertia(self, m):
        """Principal moments about the shape's centre, in the shape frame."""
        if self.kind == "box":
            x, y, z = self.dims
            return [m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12]
        if self.kind == "sphere":
            i = 0.4 * m * self.dims[0] ** 2
            return [i, i, i]
        r, h = self.dims
        if self.kind == "cylinder":
            t = m * (3 * r * r + h * h) / 12
            return [t, t, m * r * r / 2]
        if self.kind == "capsule":
            vc, vs = PI * r * r * h, 4.0 / 3.0 * PI * r**3
            mc, ms = m * vc / (vc + vs), m * vs / (vc + vs)
            t = mc * (h * h / 12 + r * r / 4) + ms * (0.4 * r * r + h * h / 4 + 3 * h * r / 8)
            return [t, t, mc * r * r / 2 + ms * 0.4 * r * r]
        raise ValueError(self.kind)

    def geometry_xml(self):
        if self.kind == "box":
            return f'<box size="{fmt(self.dims[0])} {fmt(self.dims[1])} {fmt(self.dims[2])}"/>'
        if self.kind == "sphere":
            return f'<sphere radius="{fmt(self.dims[0])}"/>'
        return f'<{self.kind} radius="{fmt(self.dims[0])}" length="{fmt(self.dims[1])}"/>'


def box(size, xyz=(0, 0, 0), rpy=(0, 0, 0), collide=True):
    return Shape("box", tuple(size), list(xyz), list(rpy), collide)


def sphere(r, xyz=(0, 0, 0), collide=True):
    return Shape("sphere", (r,), list(xyz), [0.0, 0.0, 0.0], collide)


def cylinder(r, length, xyz=(0, 0, 0), rpy=(0, 0, 0), collide=True):
    return Shape("cylinder", (r, length), list(xyz), list(rpy), collide)


def capsule(r, length, xyz=(0, 0, 0), rpy=(0, 0, 0), collide=True):
    return Shape("capsule", (r, length), list(xyz), list(rpy), collide)


def capsule_between(p0, p1, r):
    """Capsule whose cylindrical part runs from p0 to p1 (caps extend r beyond)."""
    d = sub(p1, p0)
    return capsule(r, norm(d), [(a + b) / 2 for a, b in zip(p0, p1)], rpy_z_onto(d))


def cylinder_between(p0, p1, r):
    d = sub(p1, p0)
    return cylinder(r, norm(d), [(a + b) / 2 for a, b in zip(p0, p1)], rpy_z_onto(d))


# ---------------------------------------------------------------------------------------------
# robot model


@dataclass
class Link:
    name: str
    shapes: list
    mass: float | None = None  # total mass spread over the colliding shapes by volume, or
    density: float | None = None  # a density (kg/m^3) for each colliding shape
    color: tuple = (0.7, 0.7, 0.7, 1.0)
    material: str = "grey"
    frame_only: bool = False  # a massless-in-spirit frame: tiny inertial, visual marker only
    note: str = ""

    def inertial(self):
        """(com xyz, rpy, [ixx, iyy, izz], mass)"""
        if self.frame_only:
            m, r = 0.001, 0.005
            i = 0.4 * m * r * r
            return [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [i, i, i], m
        solid = [s for s in self.shapes if s.collide]
        vols = [s.volume() for s in solid]
        if self.density is not None:
            masses = [self.density * v for v in vols]
        else:
            masses = [self.mass * v / sum(vols) for v in vols]
        mtot = sum(masses)
        com = [sum(m * s.xyz[k] for m, s in zip(masses, solid)) / mtot for k in range(3)]
        if len(solid) == 1:
            s = solid[0]
            return s.xyz, s.rpy, s.inertia(mtot), mtot
        tensor = [[0.0] * 3 for _ in range(3)]
        for m, s in zip(masses, solid):
            r = rpy_to_mat(s.rpy)
            pm = s.inertia(m)
            local = [[pm[i] if i == j else 0.0 for j in range(3)] for i in range(3)]
            rot = mat_mul(mat_mul(r, local), transpose(r))
            d = sub(s.xyz, com)
            dd = sum(x * x for x in d)
            for i in range(3):
                for j in range(3):
                    tensor[i][j] += rot[i][j] + m * ((dd if i == j else 0.0) - d[i] * d[j])
        scale = max(tensor[i][i] for i in range(3))
        off = max(abs(tensor[0][1]), abs(tensor[0][2]), abs(tensor[1][2]))
        if off <= 1e-9 * scale:
            return com, [0.0, 0.0, 0.0], [tensor[0][0], tensor[1][1], tensor[2][2]], mtot
        vals, vecs = jacobi_eigen(tensor)
        det = (
            vecs[0][0] * (vecs[1][1] * vecs[2][2] - vecs[1][2] * vecs[2][1])
            - vecs[0][1] * (vecs[1][0] * vecs[2][2] - vecs[1][2] * vecs[2][0])
            + vecs[0][2] * (vecs[1][0] * vecs[2][1] - vecs[1][1] * vecs[2][0])
        )
        if det < 0:
            for k in range(3):
                vecs[k][2] = -vecs[k][2]
        return com, mat_to_rpy(vecs), vals, mtot


@dataclass
class Joint:
    name: str
    kind: str  # revolute | prismatic | fixed
    parent: str
    child: str
    xyz: list
    rpy: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    axis: list | None = None
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float = 0.0
    friction: float = 0.0
    mimic: tuple | None = None  # (joint, multiplier, offset)


@dataclass
class Robot:
    name: str
    header: str
    links: list
    joints: list

    def link(self, name):
        return next(link for link in self.links if link.name == name)

    def world_frames(self, q=None):
        """World (R, p) of every link for joint positions q (default zero)."""
        q = q or {}
        frames = {self.links[0].name: ([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]], [0.0, 0.0, 0.0])}
        pending = list(self.joints)
        while pending:
            for j in list(pending):
                if j.parent not in frames:
                    continue
                rp, pp = frames[j.parent]
                r = mat_mul(rp, rpy_to_mat(j.rpy))
                p = add(pp, mat_vec(rp, j.xyz))
                v = q.get(j.name, 0.0)
                if j.kind == "revolute" and v:
                    r = mat_mul(r, axis_angle(j.axis, v))
                elif j.kind == "prismatic" and v:
                    p = add(p, mat_vec(r, [a * v for a in j.axis]))
                frames[j.child] = (r, p)
                pending.remove(j)
        return frames

    def to_world_shapes(self, link_name, shapes, frames):
        """Convert shapes given in world coordinates (zero pose) into the link frame."""
        r, p = frames[link_name]
        rt = transpose(r)
        out = []
        for s in shapes:
            xyz = mat_vec(rt, sub(s.xyz, p))
            rpy = mat_to_rpy(mat_mul(rt, rpy_to_mat(s.rpy)))
            out.append(Shape(s.kind, s.dims, clean(xyz), clean(rpy), s.collide))
        return out

    def joint_inertia(self, joint_name):
        """Inertia of the subtree moved by a 1-DoF revolute joint about its axis, zero pose."""
        frames = self.world_frames()
        j = next(j for j in self.joints if j.name == joint_name)
        rj, pj = frames[j.child]
        a = mat_vec(rj, j.axis)
        sub_links, stack = set(), [j.child]
        while stack:
            n = stack.pop()
            sub_links.add(n)
            stack += [c.child for c in self.joints if c.parent == n]
        total = 0.0
        for ln in sub_links:
            link = self.link(ln)
            com, rpy, moments, m = link.inertial()
            r, p = frames[ln]
            ri = mat_mul(r, rpy_to_mat(rpy))
            axl = mat_vec(transpose(ri), a)
            total += sum(moments[k] * axl[k] ** 2 for k in range(3))
            c = sub(add(p, mat_vec(r, com)), pj)
            along = sum(c[k] * a[k] for k in range(3))
            total += m * (sum(x * x for x in c) - along * along)
        return total


def axis_angle(axis, angle):
    x, y, z = (v / norm(axis) for v in axis)
    c, s = math.cos(angle), math.sin(angle)
    t = 1 - c
    return [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]


def clean(v):
    return [0.0 if abs(x) < 1e-12 else x for x in v]


def fmt(x):
    if abs(x) < 1e-15:
        return "0"
    s = f"{x:.8g}"
    if "e" in s:
        s = f"{x:.7e}"
        mant, exp = s.split("e")
        mant = mant.rstrip("0").rstrip(".")
        return f"{mant}e{int(exp)}"
    return s


def vec(v):
    return " ".join(fmt(x) for x in v)


# ---------------------------------------------------------------------------------------------
# XML writer


def to_urdf(robot: Robot) -> str:
    out = ['<?xml version="1.0"?>', "<!--"]
    out += ["  " + line if line else "" for line in robot.header.strip("\n").split("\n")]
    out += [
        "",
        "  Generated by assets/robots/generate.py (inertias computed from the collision primitives);",
        "  edit the generator, not this file. Checked by assets/robots/check_urdf.py.",
        "-->",
        f'<robot name="{robot.name}">',
    ]
    for link in robot.links:
        com, rpy, moments, m = link.inertial()
        out.append("")
        if link.note:
            out.append(f"  <!-- {link.note} -->")
        out.append(f'  <link name="{link.name}">')
        out.append("    <inertial>")
        out.append(f'      <origin xyz="{vec(clean(com))}" rpy="{vec(clean(rpy))}"/>')
        out.append(f'      <mass value="{fmt(m)}"/>')
        out.append(
            f'      <inertia ixx="{fmt(moments[0])}" ixy="0" ixz="0" iyy="{fmt(moments[1])}" iyz="0" izz="{fmt(moments[2])}"/>'
        )
        out.append("    </inertial>")
        rgba = vec(link.color)
        for s in link.shapes:
            out.append("    <visual>")
            out.append(f'      <origin xyz="{vec(clean(s.xyz))}" rpy="{vec(clean(s.rpy))}"/>')
            out.append(f"      <geometry>{s.geometry_xml()}</geometry>")
            out.append(f'      <material name="{link.material}"><color rgba="{rgba}"/></material>')
            out.append("    </visual>")
        for s in link.shapes:
            if not s.collide:
                continue
            out.append("    <collision>")
            out.append(f'      <origin xyz="{vec(clean(s.xyz))}" rpy="{vec(clean(s.rpy))}"/>')
            out.append(f"      <geometry>{s.geometry_xml()}</geometry>")
            out.append("    </collision>")
        out.append("  </link>")
    for j in robot.joints:
        out.append("")
        out.append(f'  <joint name="{j.name}" type="{j.kind}">')
        out.append(f'    <parent link="{j.parent}"/>')
        out.append(f'    <child link="{j.child}"/>')
        out.append(f'    <origin xyz="{vec(clean(j.xyz))}" rpy="{vec(clean(j.rpy))}"/>')
        if j.kind != "fixed":
            out.append(f'    <axis xyz="{vec(j.axis)}"/>')
            out.append(
                f'    <limit lower="{fmt(j.lower)}" upper="{fmt(j.upper)}" effort="{fmt(j.effort)}" velocity="{fmt(j.velocity)}"/>'
            )
            out.append(f'    <dynamics damping="{fmt(j.damping)}" friction="{fmt(j.friction)}"/>')
            if j.mimic:
                out.append(
                    f'    <mimic joint="{j.mimic[0]}" multiplier="{fmt(j.mimic[1])}" offset="{fmt(j.mimic[2])}"/>'
                )
        out.append("  </joint>")
    out.append("</robot>")
    return "\n".join(out) + "\n"


# MJCF: the same robot for MuJoCo-style tooling. Numbers are those of the URDF; MJCF adds what
# URDF cannot say (armature, actuators, the free root joint) and cannot say joint velocity
# limits (MuJoCo has none), so those are left out.

# Reflected rotor inertia per joint, kg*m^2, from the sources named in each robot's header.
MJCF_ARMATURE = {"so101": 0.028, "arm7": 0.1, "ant": 1.0}
# Motor gear per robot (ctrl in [-1, 1] times gear = torque) where the source model uses one;
# elsewhere gear 1 with ctrlrange = +-effort.
MJCF_GEAR = {"ant": 150.0}
# Robots whose root the simulator leaves free (a <freejoint> in MJCF).
MJCF_FREE = {"ant", "quadruped12"}


def rpy_to_quat(rpy):
    """MJCF quaternion "w x y z" of R = Rz(yaw) * Ry(pitch) * Rx(roll)."""
    r, p, y = (a / 2 for a in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]


def pose_attrs(xyz, rpy):
    out = ""
    if any(abs(x) > 1e-15 for x in xyz):
        out += f' pos="{vec(clean(xyz))}"'
    if any(abs(a) > 1e-15 for a in rpy):
        out += f' quat="{vec(clean(rpy_to_quat(rpy)))}"'
    return out


def geom_xml(s, rgba):
    if s.kind == "box":
        size = [d / 2 for d in s.dims]
    elif s.kind == "sphere":
        size = [s.dims[0]]
    else:
        size = [s.dims[0], s.dims[1] / 2]
    cls = "" if s.collide else ' class="visual"'
    return f'<geom{cls} type="{s.kind}" size="{vec(size)}"{pose_attrs(s.xyz, s.rpy)} rgba="{vec(rgba)}"/>'


def to_mjcf(robot: Robot, urdf_name: str) -> str:
    armature = MJCF_ARMATURE.get(robot.name, 0.0)
    gear = MJCF_GEAR.get(robot.name)
    out = ['<?xml version="1.0"?>', "<!--"]
    out += ["  " + line if line else "" for line in robot.header.strip("\n").split("\n")]
    out += [
        "",
        f"  MJCF version of {urdf_name}, generated by assets/robots/generate.py from the same numbers;",
        "  edit the generator, not this file. Joint velocity limits are not expressible in MJCF",
        "  (MuJoCo has none) and are left out. Armature, where the header names one, is written here.",
        "-->",
        f'<mujoco model="{robot.name}">',
        '  <compiler angle="radian" autolimits="true"/>',
        "  <default>",
        '    <default class="visual">',
        '      <geom contype="0" conaffinity="0" group="2"/>',
        "    </default>",
        "  </default>",
        "  <worldbody>",
    ]
    children = {}
    for j in robot.joints:
        children.setdefault(j.parent, []).append(j)

    def body(link, joint, depth):
        ind = "  " * depth
        com, rpy, moments, m = link.inertial()
        attrs = "" if joint is None else pose_attrs(joint.xyz, joint.rpy)
        out.append(f'{ind}<body name="{link.name}"{attrs}>')
        if joint is None and robot.name in MJCF_FREE:
            out.append(f'{ind}  <freejoint name="root"/>')
        if joint is not None and joint.kind != "fixed":
            kind = {"revolute": "hinge", "prismatic": "slide"}[joint.kind]
            extra = f' armature="{fmt(armature)}"' if armature else ""
            out.append(
                f'{ind}  <joint name="{joint.name}" type="{kind}" axis="{vec(joint.axis)}"'
                f' range="{fmt(joint.lower)} {fmt(joint.upper)}" damping="{fmt(joint.damping)}"'
                f' frictionloss="{fmt(joint.friction)}" actuatorfrcrange="{fmt(-joint.effort)} {fmt(joint.effort)}"{extra}/>'
            )
        # MJCF requires the inertial pos, even at the origin.
        quat = pose_attrs([0, 0, 0], rpy)
        out.append(f'{ind}  <inertial pos="{vec(clean(com))}"{quat} mass="{fmt(m)}" diaginertia="{vec(moments)}"/>')
        for s in link.shapes:
            out.append(f"{ind}  {geom_xml(s, link.color)}")
        for j in children.get(link.name, []):
            body(robot.link(j.child), j, depth + 1)
        out.append(f"{ind}</body>")

    body(robot.links[0], None, 2)
    out.append("  </worldbody>")
    mimics = [j for j in robot.joints if j.mimic]
    if mimics:
        out.append("  <equality>")
        for j in mimics:
            src, mult, off = j.mimic
            out.append(f'    <joint joint1="{j.name}" joint2="{src}" polycoef="{fmt(off)} {fmt(mult)} 0 0 0"/>')
        out.append("  </equality>")
    out.append("  <actuator>")
    for j in robot.joints:
        if j.kind == "fixed" or j.mimic:
            continue
        if gear is None:
            out.append(f'    <motor name="{j.name}" joint="{j.name}" ctrlrange="{fmt(-j.effort)} {fmt(j.effort)}"/>')
        else:
            out.append(f'    <motor name="{j.name}" joint="{j.name}" gear="{fmt(gear)}" ctrlrange="-1 1"/>')
    out.append("  </actuator>")
    out.append("</mujoco>")
    return "\n".join(out) + "\n"


# =============================================================================================
# 1. reacher2


def reacher2() -> Robot:
    rho = 1000.0  # MuJoCo default density; reacher.xml sets no density
    link_rgba, tip_rgba, base_rgba = (0.0, 0.4, 0.6, 1.0), (0.0, 0.8, 0.6, 1.0), (0.9, 0.4, 0.6, 1.0)
    robot = Robot(
        "reacher2",
        "",
        [
            Link("base", [cylinder(0.011, 0.02, (0, 0, 0.01))], density=rho, color=base_rgba, material="pink"),
            Link("body0", [capsule(0.01, 0.1, (0.05, 0, 0), (0, PI / 2, 0))], density=rho, color=link_rgba,
                 material="blue"),
            Link("body1", [capsule(0.01, 0.1, (0.05, 0, 0), (0, PI / 2, 0))], density=rho, color=link_rgba,
                 material="blue"),
            Link("fingertip", [sphere(0.01)], density=rho, color=tip_rgba, material="green"),
        ],
        [
            Joint("joint0", "revolute", "base", "body0", [0, 0, 0.01], axis=[0, 0, 1], lower=-PI, upper=PI),
            Joint("joint1", "revolute", "body0", "body1", [0.1, 0, 0], axis=[0, 0, 1], lower=-3.0, upper=3.0),
            Joint("fingertip_joint", "fixed", "body1", "fingertip", [0.11, 0, 0]),
        ],
    )
    gear, damping = 200.0, 1.0
    for j in robot.joints[:2]:
        j.effort, j.damping, j.friction, j.velocity = gear, damping, 0.0, gear / damping
    i0, i1 = robot.joint_inertia("joint0"), robot.joint_inertia("joint1")
    robot.header = f"""
reacher2: 2-DoF planar reacher, a copy of gymnasium's Reacher-v5 arm (gymnasium 1.4.0,
envs/mujoco/assets/reacher.xml).

Geometry (reacher.xml): base cylinder r 0.011 m, 0.02 m tall, at the origin; joint0 0.01 m above
the ground; link0 = capsule r 0.01 m from joint0 to joint1 (0.1 m); link1 = capsule r 0.01 m,
0.1 m long; fingertip sphere r 0.01 m 0.11 m beyond joint1. Both joints rotate about +z; all
links lie in the horizontal plane z = 0.01 m (fingertip positions agree with reacher.xml to
1e-16 m over random joint angles). Masses from MuJoCo's default density 1000 kg/m^3
(body0 = body1 = 0.0356 kg, fingertip 0.0042 kg: the same numbers MuJoCo computes).

Zero pose: both links stretched along +x; fingertip at (0.21, 0, 0.01).
Limits: joint0 is unlimited in reacher.xml; modelled here as revolute +-pi (use `continuous`
for an exact copy). joint1 +-3.0 rad as in reacher.xml.

Actuation: reacher.xml drives each joint with a motor of gear 200 and ctrl +-1, so effort 200 N*m
is MuJoCo's torque limit. MuJoCo also gives every joint armature 1 kg*m^2 (reflected rotor
inertia) and damping 1 N*m*s/rad. URDF has no armature: without it the links' own inertia about
the joints at the zero pose is only {i0:.3g} kg*m^2 (joint0) and {i1:.3g} kg*m^2 (joint1), so
200 N*m would accelerate them ~{(1 + i0) / i0:.0f}x and ~{(1 + i1) / i1:.0f}x faster than in MuJoCo. A simulator that wants
MuJoCo-like dynamics must add 1 kg*m^2 of armature per joint, or else scale effort and damping by
I_link/(I_link + 1) (about {i0 / (1 + i0):.2g} and {i1 / (1 + i1):.2g}). velocity = 200 rad/s
is not a MuJoCo limit: it is the terminal speed gear/damping, so it never binds.
Collisions: in reacher.xml nothing collides (contype 0); the shapes are given for completeness.
Base is fixed to the world by the simulator.
"""
    return robot


# =============================================================================================
# 2. SO-101


def so101() -> Robot:
    # Joint positions at the zero pose (world = base frame, x forward, z up), from
    # TheRobotStudio SO-ARM100 Simulation/SO101/so101_new_calib.urdf, rotated +90 deg about z
    # (that file's arm points along -y).
    p_pan = [0.0, 0.0, 0.0949]
    p_lift = add(p_pan, [0.0304, -0.0183, 0.0542])
    p_elbow = add(p_lift, [0.028, 0.0, 0.1126])
    p_wflex = add(p_elbow, [0.1349, 0.0, 0.0052])
    p_roll = add(p_wflex, [0.0611, 0.0181, 0.0])
    p_jaw = add(p_roll, [0.0234, 0.0188, 0.0202])
    p_tcp = add(p_roll, [0.0981, -0.0002, -0.0079])

    printed, servo, jaw_rgba = (1.0, 0.82, 0.12, 1.0), (0.1, 0.1, 0.1, 1.0), (0.95, 0.6, 0.1, 1.0)
    # shapes in world coordinates at the zero pose
    world_shapes = {
        "base": [box((0.10, 0.08, 0.08), (-0.01, 0.0, 0.04))],
        "shoulder": [box((0.06, 0.06, 0.055), (0.015, -0.009, 0.125))],
        "upper_arm": [capsule_between(p_lift, p_elbow, 0.018)],
        "lower_arm": [capsule_between(p_elbow, p_wflex, 0.016)],
        "wrist": [box((0.0454, 0.05, 0.032), (p_roll[0] - 0.0307, -0.0075, p_roll[2]))],
        "gripper": [
            box((0.05, 0.05, 0.045), add(p_roll, [0.025, 0.005, 0.0025])),  # jaw servo + roll follower
            box((0.06, 0.02, 0.014), add(p_roll, [0.08, 0.0, -0.018])),  # fixed jaw, below the TCP
        ],
        "moving_jaw": [box((0.06, 0.02, 0.014), add(p_roll, [0.08, 0.0, 0.002]))],  # above the TCP
    }
    robot = Robot(
        "so101",
        "",
        [
            Link("base", [], mass=0.147, color=printed, material="printed"),
            Link("shoulder", [], mass=0.100, color=printed, material="printed"),
            Link("upper_arm", [], mass=0.103, color=printed, material="printed"),
            Link("lower_arm", [], mass=0.104, color=printed, material="printed"),
            Link("wrist", [], mass=0.079, color=servo, material="sts3215"),
            Link("gripper", [], mass=0.087, color=printed, material="printed",
                 note="wrist-roll follower carrying the gripper servo and the fixed jaw"),
            Link("moving_jaw", [], mass=0.012, color=jaw_rgba, material="jaw"),
            Link("gripper_frame", [sphere(0.004, collide=False)], frame_only=True, color=(1, 0, 0, 1),
                 material="tcp", note="tool centre point between the jaws (end-effector frame), no collision"),
        ],
        [
            Joint("shoulder_pan", "revolute", "base", "shoulder", p_pan, axis=[0, 0, -1],
                  lower=-1.91986, upper=1.91986),
            Joint("shoulder_lift", "revolute", "shoulder", "upper_arm", sub(p_lift, p_pan), axis=[0, 1, 0],
                  lower=-1.74533, upper=1.74533),
            Joint("elbow_flex", "revolute", "upper_arm", "lower_arm", sub(p_elbow, p_lift), axis=[0, 1, 0],
                  lower=-1.69, upper=1.69),
            Joint("wrist_flex", "revolute", "lower_arm", "wrist", sub(p_wflex, p_elbow), axis=[0, 1, 0],
                  lower=-1.65806, upper=1.65806),
            Joint("wrist_roll", "revolute", "wrist", "gripper", sub(p_roll, p_wflex), axis=[-1, 0, 0],
                  lower=-2.79253, upper=2.79253),
            Joint("gripper", "revolute", "gripper", "moving_jaw", sub(p_jaw, p_roll), axis=[0, -1, 0],
                  lower=-0.174533, upper=1.74533),
            Joint("gripper_frame_joint", "fixed", "gripper", "gripper_frame", sub(p_tcp, p_roll)),
        ],
    )
    for j in robot.joints:
        if j.kind == "revolute":
            j.effort, j.velocity, j.damping, j.friction = 2.94, 4.71, 0.60, 0.052
    frames = robot.world_frames()
    for name, shapes in world_shapes.items():
        robot.link(name).shapes = robot.to_world_shapes(name, shapes, frames)
    robot.header = """
so101: SO-101 6-servo desk arm (TheRobotStudio SO-ARM100 / Hugging Face LeRobot), primitives only.

Joint names are LeRobot's SO-101 motor names: shoulder_pan, shoulder_lift, elbow_flex,
wrist_flex, wrist_roll (5 arm servos) and gripper (1 servo moving one jaw against a fixed jaw
that is part of the `gripper` link). `gripper_frame` is the tool centre point (end-effector).

Sources of the numbers:
- Kinematics, axes, zero pose, joint limits and link masses: TheRobotStudio/SO-ARM100,
  Simulation/SO101/so101_new_calib.urdf (onshape-to-robot export; LeRobot's "new calibration",
  where 0 is the middle of each joint's range). That file's arm points along -y; here the
  whole robot is turned +90 deg about z so the arm points along +x. Joint offsets, in m:
  pan axis 0.0949 above the base origin (the table); shoulder_lift +0.0304 forward, -0.0183
  lateral, +0.0542 up from the pan joint; elbow +0.028 / 0 / +0.1126 (upper arm ~0.116 m);
  wrist_flex +0.1349 / 0 / +0.0052 (forearm ~0.135 m); wrist_roll +0.0611 / +0.0181 / 0;
  moving-jaw hinge +0.0234 / +0.0188 / +0.0202 from the roll joint; tool centre point
  +0.0981 / -0.0002 / -0.0079 from the roll joint. Masses (kg): base 0.147, shoulder 0.100,
  upper_arm 0.103, lower_arm 0.104, wrist 0.079, gripper 0.087, moving_jaw 0.012 (each with
  its STS3215, 55 g). Limits (rad): pan +-1.91986 (110 deg), lift +-1.74533 (100 deg),
  elbow +-1.69, wrist_flex +-1.65806 (95 deg), wrist_roll +-2.79253 (160 deg),
  gripper -0.174533..1.74533 (-10..100 deg; 0 = closed, positive opens the jaw upwards).
  Axis signs are that file's (pan about -z, lift/elbow/wrist_flex about +y so positive pitches
  the arm forward/down, wrist_roll about -x, gripper about -y): check them against the real
  arm's calibrated sign before driving hardware.
- Servo: Feetech STS3215 C018 (12 V, 1:345): stall torque 30 kg*cm = 2.94 N*m at 12 V ->
  effort 2.94 (the 7.4 V variant gives 19.5 kg*cm = 1.91 N*m); no-load speed 45 rpm
  (0.222 s/60 deg) -> velocity 4.71 rad/s.
- damping 0.60 N*m*s/rad and friction 0.052 N*m: STS3215 identification used by
  SO-ARM100 Simulation/SO101/joints_properties.xml (from Open Duck Playground), which also
  adds armature 0.028 kg*m^2 per joint, not expressible in URDF.
- Shapes are hand-fitted boxes and capsules, not the CAD meshes; inertias come from them at
  the official masses, so the centres of mass differ from the CAD by a few cm.

Zero pose ("L"): upper arm vertical, forearm, wrist and gripper horizontal and pointing
forward (+x), jaw closed; tool centre point at about (0.3525, 0, 0.259) m: 0.35 m in front of
the pan axis, 0.26 m above the table. Fully stretched reach from the shoulder_lift axis is
about 0.41 m. The base is fixed to the world by the simulator; the base origin is on the table
under the pan axis.
"""
    return robot


def koch() -> Robot:
    # Joint offsets at the zero pose from the Koch v1.1 follower CAD export (jess-moss/koch-v1-1,
    # Apache-2.0, as packaged by ManiSkill: mani_skill/assets/robots/koch/follower_arm_v1.1.urdf),
    # turned so that the forearm points along +x (that file's forearm points along -y):
    # x_here = -y_there, y_here = x_there.
    p_pan = [0.0, 0.0, 0.0386]  # 0.018513 + 0.020066 above the base plate
    p_lift = add(p_pan, [0.0, 0.020713, 0.015368])
    p_elbow = add(p_lift, [0.014951, -0.038026, 0.108424])
    p_wflex = add(p_elbow, [0.100502, -0.000251, 0.002641])
    p_roll = add(p_wflex, [-0.00037, 0.019234, -0.044779])
    p_jaw = add(p_roll, [0.017441, 0.007429, -0.013336])
    p_tcp = add(p_roll, [0.0, -0.008, -0.065])

    printed, servo, jaw_rgba = (0.79, 0.82, 0.93, 1.0), (0.1, 0.1, 0.1, 1.0), (0.95, 0.6, 0.1, 1.0)
    world_shapes = {
        "base": [box((0.07, 0.06, 0.035), (0.0, 0.0, 0.0175))],
        "shoulder": [box((0.036, 0.046, 0.03), (0.0, 0.008, 0.05))],
        "upper_arm": [capsule_between(p_lift, p_elbow, 0.014)],
        "lower_arm": [capsule_between(p_elbow, p_wflex, 0.013)],
        "wrist": [box((0.03, 0.024, 0.04), (p_wflex[0], p_wflex[1] + 0.008, p_wflex[2] - 0.02))],
        "gripper": [
            box((0.024, 0.034, 0.03), add(p_roll, [0.0, -0.004, -0.006])),  # jaw servo
            box((0.01, 0.02, 0.05), add(p_roll, [-0.012, -0.008, -0.05])),  # fixed jaw
        ],
        "moving_jaw": [box((0.01, 0.02, 0.045), add(p_roll, [0.012, -0.008, -0.05]))],
    }
    robot = Robot(
        "koch",
        "",
        [
            Link("base", [], mass=0.125, color=printed, material="printed"),
            Link("shoulder", [], mass=0.107, color=servo, material="xl430"),
            Link("upper_arm", [], mass=0.068, color=printed, material="printed"),
            Link("lower_arm", [], mass=0.081, color=printed, material="printed"),
            Link("wrist", [], mass=0.038, color=servo, material="xl330"),
            Link("gripper", [], mass=0.047, color=printed, material="printed",
                 note="wrist-roll follower carrying the gripper servo and the fixed jaw"),
            Link("moving_jaw", [], mass=0.013, color=jaw_rgba, material="jaw"),
            Link("gripper_frame", [sphere(0.004, collide=False)], frame_only=True, color=(1, 0, 0, 1),
                 material="tcp", note="tool centre point between the jaws (end-effector frame), no collision"),
        ],
        [
            Joint("shoulder_pan", "revolute", "base", "shoulder", p_pan, axis=[0, 0, 1],
                  lower=-2.0, upper=2.0, effort=1.4, velocity=5.97),
            Joint("shoulder_lift", "revolute", "shoulder", "upper_arm", sub(p_lift, p_pan), axis=[0, 1, 0],
                  lower=-1.75, upper=1.75, effort=1.4, velocity=5.97),
            Joint("elbow_flex", "revolute", "upper_arm", "lower_arm", sub(p_elbow, p_lift), axis=[0, 1, 0],
                  lower=-1.75, upper=1.75, effort=0.52, velocity=10.8),
            Joint("wrist_flex", "revolute", "lower_arm", "wrist", sub(p_wflex, p_elbow), axis=[0, 1, 0],
                  lower=-1.75, upper=1.75, effort=0.52, velocity=10.8),
            Joint("wrist_roll", "revolute", "wrist", "gripper", sub(p_roll, p_wflex), axis=[0, 0, 1],
                  lower=-2.79253, upper=2.79253, effort=0.52, velocity=10.8),
            Joint("gripper", "revolute", "gripper", "moving_jaw", sub(p_jaw, p_roll), axis=[-1, 0, 0],
                  lower=-1.75, upper=0.0, effort=0.52, velocity=10.8),
            Joint("gripper_frame_joint", "fixed", "gripper", "gripper_frame", sub(p_tcp, p_roll)),
        ],
    )
    for j in robot.joints:
        if j.kind == "revolute":
            j.damping, j.friction = 0.1, 0.02
    frames = robot.world_frames()
    for name, shapes in world_shapes.items():
        robot.link(name).shapes = robot.to_world_shapes(name, shapes, frames)
    robot.header = """
koch: Koch v1.1 follower, a 6-servo Dynamixel desk arm (Alexander Koch / jess-moss, used by
Hugging Face LeRobot as `koch_follower`), primitives only.

Joint names are LeRobot's koch_follower motor names: shoulder_pan and shoulder_lift (XL430-W250),
elbow_flex, wrist_flex, wrist_roll and gripper (XL330-M288).

Sources of the numbers:
- Joint offsets and axes at the zero pose: the Koch v1.1 follower CAD export
  (jess-moss/koch-v1-1, Apache-2.0) as packaged by ManiSkill
  (mani_skill/assets/robots/koch/follower_arm_v1.1.urdf), turned +90 deg about z so the forearm
  points along +x. Offsets, in m: pan axis 0.0386 above the base plate; shoulder_lift
  0.0207 lateral, 0.0154 up from the pan joint; elbow +0.0150 / -0.0380 / +0.1084 (upper arm
  ~0.108 m); wrist_flex +0.1005 / 0 / +0.0026 (forearm ~0.10 m); wrist_roll axis vertical,
  -0.0448 below and +0.0192 lateral of wrist_flex; moving-jaw hinge +0.0174 / +0.0074 / -0.0133
  from the roll joint; tool centre point 0.065 below the roll joint.
- Masses (kg): that file's printed parts plus the servos (XL430-W250 57.2 g, XL330-M288 18 g,
  Robotis e-manual): base 0.125, shoulder 0.107, upper_arm 0.068, lower_arm 0.081, wrist 0.038,
  gripper 0.047, moving_jaw 0.013.
- Effort and velocity: XL430-W250 stall torque 1.4 N*m and no-load speed 57 rpm (5.97 rad/s) at
  11.1 V; XL330-M288 0.52 N*m and 103 rpm (10.8 rad/s) at 5 V (Robotis e-manual).
- Joint limits are embodia's choice, not measured: +-2.0 rad pan, +-1.75 rad lift, elbow and
  wrist_flex, +-2.79 rad wrist_roll, gripper -1.75..0 rad (as that file). The ranges a
  calibration records narrow them.
- damping 0.1 N*m*s/rad and friction 0.02 N*m are placeholders (no identification of these
  servos is published): fit them before trusting a sim-to-real transfer.
- Shapes are hand-fitted boxes and capsules, not the CAD meshes; inertias come from them.

Zero pose: upper arm vertical, forearm horizontal and pointing forward (+x), wrist and gripper
pointing down; tool centre point at about (0.115, -0.006, 0.055) m. The base is fixed to the
world by the simulator; the base origin is on the table under the pan axis.
"""
    return robot


# =============================================================================================
# 3. arm7 (Franka Panda kinematics)


def arm7() -> Robot:
    hp = PI / 2
    white, dark, hand_rgba = (0.95, 0.95, 0.95, 1.0), (0.25, 0.25, 0.25, 1.0), (0.9, 0.92, 0.93, 1.0)
    links = [
        Link("link0", [], mass=0.629769, color=dark, material="dark"),
        Link("link1", [], mass=4.970684, color=white, material="white"),
        Link("link2", [], mass=0.646926, color=white, material="white"),
        Link("link3", [], mass=3.228604, color=white, material="white"),
        Link("link4", [], mass=3.587895, color=white, material="white"),
        Link("link5", [], mass=1.225946, color=white, material="white"),
        Link("link6", [], mass=1.666555, color=white, material="white"),
        Link("link7", [], mass=0.735522, color=dark, material="dark"),
        Link("hand", [], mass=0.73, color=hand_rgba, material="off_white",
             note="Franka Hand; the flange frame (panda link8) is folded into hand_joint"),
        Link("leftfinger", [], mass=0.015, color=dark, material="dark"),
        Link("rightfinger", [], mass=0.015, color=dark, material="dark"),
        Link("tcp", [sphere(0.005, collide=False)], frame_only=True, color=(1, 0, 0, 1), material="tcp",
             note="tool centre point between the fingertips (end-effector frame), no collision"),
    ]
    lim = [
        (-2.8973, 2.8973, 87, 2.175),
        (-1.7628, 1.7628, 87, 2.175),
        (-2.8973, 2.8973, 87, 2.175),
        (-3.0718, -0.0698, 87, 2.175),
        (-2.8973, 2.8973, 12, 2.61),
        (-0.0175, 3.7525, 12, 2.61),
        (-2.8973, 2.8973, 12, 2.61),
    ]
    origins = [
        ([0, 0, 0.333], [0, 0, 0]),
        ([0, 0, 0], [-hp, 0, 0]),
        ([0, -0.316, 0], [hp, 0, 0]),
        ([0.0825, 0, 0], [hp, 0, 0]),
        ([-0.0825, 0.384, 0], [-hp, 0, 0]),
        ([0, 0, 0], [hp, 0, 0]),
        ([0.088, 0, 0], [hp, 0, 0]),
    ]
    joints = []
    for i, ((lo, hi, eff, vel), (xyz, rpy)) in enumerate(zip(lim, origins)):
        joints.append(Joint(f"joint{i + 1}", "revolute", f"link{i}", f"link{i + 1}", xyz, rpy, [0, 0, 1],
                            lo, hi, eff, vel, damping=1.0, friction=0.0))
    joints += [
        Joint("hand_joint", "fixed", "link7", "hand", [0, 0, 0.107], [0, 0, -PI / 4]),
        Joint("finger_joint1", "prismatic", "hand", "leftfinger", [0, 0, 0.0584], axis=[0, 1, 0],
              lower=0.0, upper=0.04, effort=70.0, velocity=0.2, damping=1.0, friction=0.0),
        Joint("finger_joint2", "prismatic", "hand", "rightfinger", [0, 0, 0.0584], axis=[0, -1, 0],
              lower=0.0, upper=0.04, effort=70.0, velocity=0.2, damping=1.0, friction=0.0,
              mimic=("finger_joint1", 1.0, 0.0)),
        Joint("tcp_joint", "fixed", "hand", "tcp", [0, 0, 0.1034]),
    ]
    robot = Robot("arm7", "", links, joints)
    frames = robot.world_frames()
    px = 0.088  # x of the wrist column at the zero pose
    world_shapes = {
        "link0": [box((0.24, 0.18, 0.14), (-0.04, 0, 0.07))],
        "link1": [capsule_between([0, 0, 0.20], [0, 0, 0.28], 0.06)],
        "link2": [capsule_between([0, -0.06, 0.333], [0, 0.06, 0.333], 0.06)],
        "link3": [capsule_between([0, 0, 0.46], [0, 0, 0.58], 0.06)],
        "link4": [capsule_between([0.0825, -0.05, 0.649], [0.0825, 0.05, 0.649], 0.06)],
        "link5": [
            capsule_between([0, 0, 0.76], [0, 0, 0.80], 0.06),  # forearm body
            capsule_between([0, 0, 0.82], [0, 0, 0.95], 0.03),  # slim neck: the q7 = 0 hand passes 0.037 m from it
        ],
        "link6": [capsule_between([0, 0, 1.033], [px, 0, 1.033], 0.05)],
        "link7": [capsule_between([px, 0, 0.99], [px, 0, 0.96], 0.04)],
    }
    for name, shapes in world_shapes.items():
        robot.link(name).shapes = robot.to_world_shapes(name, shapes, frames)
    # hand and fingers in their own frames (z along the approach direction, y = finger travel)
    robot.link("hand").shapes = [box((0.05, 0.2, 0.06), (0, 0, 0.03))]
    robot.link("leftfinger").shapes = [box((0.02, 0.018, 0.045), (0, 0.01, 0.027))]
    robot.link("rightfinger").shapes = [box((0.02, 0.018, 0.045), (0, -0.01, 0.027))]
    robot.header = """
arm7: 7-DoF arm with a parallel gripper, Franka Emika Panda kinematics, primitives only.

Sources of the numbers:
- Joint origins: franka_description panda_arm.xacro / panda.urdf (also MuJoCo Menagerie
  franka_emika_panda): d1 = 0.333, d3 = 0.316, a4 = 0.0825, a5 = -0.0825, d5 = 0.384,
  a7 = 0.088, flange d = 0.107, hand rotated -45 deg about the flange z, finger joints
  0.0584 and the tool centre point 0.1034 along the hand z. Every joint turns about its
  frame's z axis (the frames carry the +-90 deg roll of the Panda URDF).
- Limits (Franka datasheet): q1 +-2.8973, q2 +-1.7628, q3 +-2.8973, q4 -3.0718..-0.0698,
  q5 +-2.8973, q6 -0.0175..3.7525, q7 +-2.8973 rad; velocity 2.175 (q1-q4) and 2.61 (q5-q7)
  rad/s; effort 87 (q1-q4) and 12 (q5-q7) N*m.
- Fingers: two prismatic joints 0..0.04 m each along +-y of the hand; finger_joint2 mimics
  finger_joint1. effort 70 N = the Franka Hand's continuous grasping force (datasheet; 140 N
  peak); franka_description writes 20. velocity 0.2 m/s as franka_description (the datasheet
  gives 0.05 m/s per finger for the real hand).
- Masses (kg): identified by Gaz et al. 2019, "Dynamic Identification of the Franka Emika Panda
  Robot With Retrieval of Feasible Parameters Using Penalty-Based Optimization" (as used in
  MuJoCo Menagerie): link0 0.630, link1 4.971, link2 0.647, link3 3.229, link4 3.588,
  link5 1.226, link6 1.667, link7 0.736, hand 0.73, fingers 0.015 each.
  Inertias are NOT the identified ones: they come from the capsules/boxes below at those masses.
- damping 1 N*m*s/rad as Menagerie (which also adds armature 0.1 kg*m^2, not expressible in
  URDF); friction 0.
- Shapes: capsules r 0.03-0.06 m hand-fitted to the Panda's links at the zero pose, a box hand
  (0.05 x 0.2 x 0.06 m) and box fingers (0.02 x 0.018 x 0.045 m); not the CAD meshes.

Zero pose: all joints 0 = arm straight up, flange at (0.088, 0, 0.926) m, hand pointing down,
tool centre point at (0.088, 0, 0.8226) m. Note q4 = 0 is OUTSIDE joint4's limits
(-3.0718..-0.0698), as on the real robot. Recommended home pose:
  [joint1..joint7] = [0, -0.785, 0, -2.356, 0, 1.571, 0.785], fingers 0.04 (open);
there the tool centre point is at about (0.307, 0, 0.487) m, pointing down.
The base (link0) is fixed to the world by the simulator.
"""
    return robot


# =============================================================================================
# 4. quadruped12 (Unitree Go1 proportions)


def quadruped12() -> Robot:
    body, hip_rgba, thigh_rgba, calf_rgba, foot_rgba = (
        (0.85, 0.85, 0.85, 1.0),
        (0.15, 0.15, 0.15, 1.0),
        (0.3, 0.3, 0.3, 1.0),
        (0.15, 0.15, 0.15, 1.0),
        (0.05, 0.05, 0.05, 1.0),
    )
    links = [Link("trunk", [box((0.376, 0.19, 0.114))], mass=5.204, color=body, material="body")]
    joints = []
    for leg, sx, sy in (("FL", 1, 1), ("FR", 1, -1), ("RL", -1, 1), ("RR", -1, -1)):
        links += [
            Link(f"{leg}_hip", [cylinder(0.046, 0.04, (0, sy * 0.055, 0), (PI / 2, 0, 0))], mass=0.68,
                 color=hip_rgba, material="hip"),
            Link(f"{leg}_thigh", [capsule_between([0, 0, -0.025], [0, 0, -0.19], 0.017)], mass=1.009,
                 color=thigh_rgba, material="thigh"),
            Link(f"{leg}_calf", [capsule_between([0, 0, -0.02], [0, 0, -0.19], 0.012)], mass=0.166,
                 color=calf_rgba, material="calf"),
            Link(f"{leg}_foot", [sphere(0.02)], mass=0.03, color=foot_rgba, material="foot"),
        ]
        joints += [
            Joint(f"{leg}_hip_joint", "revolute", "trunk", f"{leg}_hip", [sx * 0.1881, sy * 0.04675, 0],
                  axis=[1, 0, 0], lower=-0.863, upper=0.863, effort=23.7, velocity=30.1, damping=1.0,
                  friction=0.2),
            Joint(f"{leg}_thigh_joint", "revolute", f"{leg}_hip", f"{leg}_thigh", [0, sy * 0.08, 0],
                  axis=[0, 1, 0], lower=-0.686, upper=4.501, effort=23.7, velocity=30.1, damping=2.0,
                  friction=0.2),
            Joint(f"{leg}_calf_joint", "revolute", f"{leg}_thigh", f"{leg}_calf", [0, 0, -0.213],
                  axis=[0, 1, 0], lower=-2.818, upper=-0.888, effort=35.55, velocity=20.06, damping=2.0,
                  friction=0.2),
            Joint(f"{leg}_foot_fixed", "fixed", f"{leg}_calf", f"{leg}_foot", [0, 0, -0.213]),
        ]
    robot = Robot("quadruped12", "", links, joints)
    robot.header = """
quadruped12: 12-DoF quadruped with Unitree Go1 proportions, primitives only.

Sources of the numbers: Unitree go1_description (unitree_ros) and MuJoCo Menagerie unitree_go1:
- Trunk: collision box 0.376 x 0.19 x 0.114 m (Menagerie's trunk is a 0.25 x 0.08 x 0.114 box
  flanked by two r 0.058 cylinders: about that envelope), mass 5.204 kg.
- Hip joints (abduction, about +x) at (+-0.1881, +-0.04675, 0); thigh joints (about +y) 0.08 m
  further out (+-y); calf joints (about +y) 0.213 m below the thigh joint; foot centre 0.213 m
  below the calf joint; foot sphere r 0.02 m.
- Masses (kg): hip 0.68, thigh 1.009, calf 0.166 + foot 0.03 (Menagerie's calf incl. foot:
  0.196); total 12.74 kg.
- Limits: hip +-0.863, thigh -0.686..4.501, calf -2.818..-0.888 rad; effort 23.7 / 23.7 /
  35.55 N*m; velocity 30.1 / 30.1 / 20.06 rad/s (Go1 URDF).
- dynamics: damping 1 (hip) / 2 (thigh, calf) N*m*s/rad and friction 0.2 N*m, as Menagerie
  (which also adds armature 0.01 kg*m^2, not expressible in URDF).
- Shapes: hip = cylinder r 0.046 along y (the thigh motor), thigh = capsule r 0.017,
  calf = capsule r 0.012, foot = sphere r 0.02; hand-fitted, not the meshes.

Joint signs (right-hand rule about the joint axis, the same for all four legs, as Go1):
positive hip moves the foot towards +y (outwards for left legs, inwards for right legs);
positive thigh swings the foot backwards (-x); the calf range is negative (knee bent with
the foot moving forwards relative to the thigh).

Zero pose: all legs straight down (calf = 0 is OUTSIDE its limits -2.818..-0.888, as on Go1);
feet 0.426 m below the trunk centre. Standing pose: hip 0, thigh 0.9, calf -1.8 (Menagerie
"home" keyframe) for all legs: feet 0.265 m below the trunk centre, directly under the hips,
so the trunk centre is at about 0.285 m above flat ground (foot radius 0.02).
Root link `trunk` is free-floating in the simulator.
"""
    return robot


# =============================================================================================
# 5. ant (gymnasium Ant-v5)


def ant() -> Robot:
    rho = 5.0  # ant.xml: <geom density="5.0"/>
    rgba = (0.8, 0.6, 0.4, 1.0)
    aux_len, leg_len, ankle_len, r = 0.2 * SQRT2, 0.2 * SQRT2, 0.4 * SQRT2, 0.08
    # (index, direction angle of the leg, MuJoCo ankle axis (world), ankle range in degrees)
    legs = [
        (1, 45.0, (-1, 1, 0), (30, 70)),
        (2, 135.0, (1, 1, 0), (-70, -30)),
        (3, -135.0, (-1, 1, 0), (-70, -30)),
        (4, -45.0, (1, 1, 0), (30, 70)),
    ]
    torso_shapes = [sphere(0.25)]
    links, joints = [], []
    for i, deg, mj_axis, (lo, hi) in legs:
        th = math.radians(deg)
        c, s = math.cos(th), math.sin(th)
        # aux_i_geom of MuJoCo's body front_left_leg etc. (welded to the torso): from the centre
        # out to the hip along the diagonal
        torso_shapes.append(capsule(r, aux_len, (0.1 * SQRT2 * c, 0.1 * SQRT2 * s, 0), (0, PI / 2, th)))
        # ankle axis in the leg frame (leg frame = world turned by th about z)
        n = norm(mj_axis)
        ax = [(c * mj_axis[0] + s * mj_axis[1]) / n, (-s * mj_axis[0] + c * mj_axis[1]) / n, 0.0]
        ax = [round(v, 12) + 0.0 for v in ax]
        links += [
            Link(f"aux_{i}", [capsule(r, leg_len, (leg_len / 2, 0, 0), (0, PI / 2, 0))], density=rho,
                 color=rgba, material="ant"),
            Link(f"foot_{i}", [capsule(r, ankle_len, (ankle_len / 2, 0, 0), (0, PI / 2, 0))], density=rho,
                 color=rgba, material="ant"),
        ]
        joints += [
            Joint(f"hip_{i}", "revolute", "torso", f"aux_{i}", [0.2 * SQRT2 * c, 0.2 * SQRT2 * s, 0],
                  [0, 0, th], [0, 0, 1], math.radians(-30), math.radians(30)),
            Joint(f"ankle_{i}", "revolute", f"aux_{i}", f"foot_{i}", [leg_len, 0, 0], axis=ax,
                  lower=math.radians(lo), upper=math.radians(hi)),
        ]
    links.insert(0, Link("torso", torso_shapes, density=rho, color=rgba, material="ant",
                         note="torso sphere + the four welded aux capsules of ant.xml's *_leg bodies"))
    robot = Robot("ant", "", links, joints)
    gear, damping = 150.0, 1.0
    for j in robot.joints:
        j.effort, j.velocity, j.damping, j.friction = gear, gear / damping, damping, 0.0
    ih, ia = robot.joint_inertia("hip_1"), robot.joint_inertia("ankle_1")
    total = sum(link.inertial()[3] for link in robot.links)
    robot.header = f"""
ant: 8-DoF quadruped, a copy of gymnasium's Ant-v5 (gymnasium 1.4.0, envs/mujoco/assets/ant.xml),
primitives only.

Geometry (ant.xml): torso sphere r 0.25 m; four legs along the diagonals: leg 1 at 45 deg
(+x +y, ant.xml body front_left_leg), leg 2 at 135 deg (-x +y, front_right_leg), leg 3 at
-135 deg (-x -y, back_leg), leg 4 at -45 deg (+x -y, right_back_leg). Each leg: a capsule
r 0.08 m from the torso centre to the hip (0.2*sqrt2 = 0.283 m; ant.xml puts it in the
joint-less *_leg bodies, here it is welded into `torso`), the hip link `aux_i` (capsule
0.283 m) and the lower leg `foot_i` (capsule 0.4*sqrt2 = 0.566 m; unnamed body in ant.xml).
Capsule lengths are the segment lengths (MuJoCo fromto); the caps extend 0.08 m beyond. Each
leg frame is the torso frame turned about z onto the leg's diagonal, so the capsules lie
along the frame's x axis.
Masses from ant.xml's density 5 kg/m^3 (the same as MuJoCo computes): torso sphere 0.327 kg +
4 x 0.0392 kg aux capsules, aux_i 0.0392 kg, foot_i 0.0676 kg; total {total:.4f} kg.

Joints (names and qpos order as ant.xml: hip_1, ankle_1, ..., hip_4, ankle_4; NOTE the
actuator order of ant.xml, i.e. Ant-v5's action vector, is hip_4, ankle_4, hip_1, ankle_1,
hip_2, ankle_2, hip_3, ankle_3):
- hip_i about +z, -30..30 deg.
- ankle_i about ant.xml's axis expressed in the leg frame: (-1,1,0)/sqrt2 for legs 1 and 3 and
  (1,1,0)/sqrt2 for legs 2 and 4 become +y (legs 1, 4) and -y (legs 2, 3); ranges as ant.xml:
  30..70 deg (legs 1, 4), -70..-30 deg (legs 2, 3). With these signs every in-range ankle
  angle bends the lower leg downwards and joint values equal MuJoCo's qpos (checked: the
  foot tips of this file and of ant.xml agree to 1e-8 m over random in-range poses).
Actuation: motors of gear 150, ctrl +-1 -> effort 150 N*m; damping 1 N*m*s/rad. MuJoCo also
sets armature 1 kg*m^2 on every hinge, which URDF cannot express; the links' own inertia
about hip_1 and ankle_1 at the zero pose is only {ih:.3g} and {ia:.3g} kg*m^2, so without
armature 150 N*m accelerates them ~{(1 + ih) / ih:.0f}x and ~{(1 + ia) / ia:.0f}x faster than MuJoCo does. A simulator aiming at
MuJoCo-like behaviour must add 1 kg*m^2 of armature per joint (or scale effort and damping).
velocity 150 rad/s is not a MuJoCo limit but the terminal speed gear/damping (never binds).
Collisions: in ant.xml the robot's geoms collide only with the floor (conaffinity 0), never
with each other.

Zero pose: legs straight and horizontal (ankles at 0, OUTSIDE their ranges; MuJoCo's qpos0 is
the same and the limits push the ankles in after reset). Ant-v5 resets the torso centre to
z = 0.75 m (plus noise). Root link `torso` is free-floating in the simulator.
"""
    return robot


# =============================================================================================
# 6. planar pusher (Push-T)


def pusher2d() -> Robot:
    workspace, height = 0.35, 0.2  # travel +-0.35 m per axis; gantry 0.2 m above the table
    puck_r, puck_h, puck_z = 0.025, 0.04, 0.025  # puck bottom 5 mm above the table
    rod_r = 0.008
    robot = Robot(
        "pusher2d",
        "",
        [
            Link("base", [box((0.02, 0.02, 0.02), (0, 0, 0.01), collide=False)], frame_only=True,
                 color=(0.3, 0.3, 0.3, 1.0), material="dark"),
            Link("carriage_x", [box((0.04, 2 * workspace + 0.1, 0.02))], mass=0.5, color=(0.5, 0.5, 0.5, 1.0),
                 material="grey"),
            Link("pusher", [
                cylinder_between([0, 0, puck_z + puck_h / 2 - height], [0, 0, 0], rod_r),
                cylinder(puck_r, puck_h, (0, 0, puck_z - height)),
            ], mass=0.2, color=(0.25, 0.4, 0.9, 1.0), material="blue"),
            Link("tip", [sphere(0.004, collide=False)], frame_only=True, color=(1, 0, 0, 1), material="tcp",
                 note="centre of the puck (end-effector frame), no collision"),
        ],
        [
            Joint("slide_x", "prismatic", "base", "carriage_x", [0, 0, height], axis=[1, 0, 0], lower=-workspace,
                  upper=workspace, effort=50.0, velocity=1.0, damping=0.0),
            Joint("slide_y", "prismatic", "carriage_x", "pusher", [0, 0, 0], axis=[0, 1, 0], lower=-workspace,
                  upper=workspace, effort=50.0, velocity=1.0, damping=0.0),
            Joint("tip_joint", "fixed", "pusher", "tip", [0, 0, puck_z - height]),
        ],
    )
    robot.header = f"""
pusher2d: a planar pusher for Push-T: a cylindrical puck moved in the table plane by two
prismatic joints (an x-y gantry), like the disc agent of diffusion policy's Push-T
(Chi et al. 2023, pymunk: agent radius 15 px; at 600 px/m, the scale at which the T block's
bar is 0.2 m, that is 0.025 m).

Geometry: slide_x moves the gantry beam (carriage_x, 0.5 kg, {height} m above the table) along x,
slide_y moves the pusher (0.2 kg) along the beam in y; each travels +-{workspace} m from the
base origin, which sits on the table top. The pusher is a rod (r {rod_r} m) down to a puck
(r {puck_r} m, {puck_h} m tall, its bottom 5 mm above the table so that it never rubs the table);
only the puck reaches down to objects on the table (a T block 0.03 m tall). The end-effector
frame `tip` is the puck's centre, at z = {puck_z} m.
Actuation: effort 50 N and velocity 1 m/s per axis (the agent of Push-T is PD-driven towards the
commanded point: k_p 100, k_v 20 in pymunk units); no joint damping or friction.

Zero pose: the puck above the base origin. The base is fixed to the world by the simulator.
"""
    return robot


ROBOTS = {
    "reacher2.urdf": reacher2,
    "so101.urdf": so101,
    "koch.urdf": koch,
    "arm7.urdf": arm7,
    "quadruped12.urdf": quadruped12,
    "ant.urdf": ant,
    "pusher2d.urdf": pusher2d,
}

# MJCF versions of these robots (same numbers, see to_mjcf).
MJCF_ROBOTS = ["so101", "arm7", "quadruped12", "ant"]


def main(argv):
    check = "--check" in argv
    stale = []
    outputs = [(filename, to_urdf(build())) for filename, build in ROBOTS.items()]
    outputs += [(f"{name}.xml", to_mjcf(ROBOTS[f"{name}.urdf"](), f"{name}.urdf")) for name in MJCF_ROBOTS]
    for filename, text in outputs:
        path = HERE / filename
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(filename)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent.parent)}")
    if stale:
        print("out of date: " + ", ".join(stale) + " (run assets/robots/generate.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
