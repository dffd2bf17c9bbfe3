#!/usr/bin/env python3
"""Check the URDF robot descriptions in this folder and print a summary of each.

    python3 assets/robots/check_urdf.py                # every *.urdf next to this script
    python3 assets/robots/check_urdf.py FILE.urdf ...  # the given files

Standard library only, independent of generate.py. Exits 1 if any check fails. Checks:
- the XML parses, <robot name> is set, link and joint names are unique;
- every joint's parent and child exist, every link is the child of at most one joint, there is
  exactly one root and every link is reachable from it (a tree);
- joint types are known; revolute/prismatic joints have <limit lower < upper, effort > 0,
  velocity > 0>; every moving joint has <dynamics damping >= 0 friction >= 0> and an axis along
  a principal direction (+-x, +-y, +-z); mimic targets exist and are not mimics themselves;
- every link has an <inertial> with mass > 0 and an inertia tensor whose principal moments are
  positive and satisfy the triangle inequality (I1 + I2 >= I3);
- geometry is primitives only (box, sphere, cylinder, capsule) with positive sizes, and every
  visual has a colour (<material><color rgba/></material>, inline or by name);
- each link's inertia equals the one of its collision primitives at uniform density and the
  link's mass (within 1 %; links without collision shapes are skipped);
- no collision shapes of two links that are not parent and child overlap, at the zero pose and
  at the named poses below (sampled on a grid inside each shape; touching within 0.1 mm is ok).
It prints, per robot: links, joints, actuated DoF, total mass and the forward kinematics of the
end-effector or feet at the zero pose and the named poses.
"""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRIMITIVES = {"box", "sphere", "cylinder", "capsule"}
JOINT_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}
DEG = math.pi / 180

# What to report for the robots of this folder: end-effector links and named poses.
FEET_Q = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
KNOWN = {
    "reacher2": {"ee": ["fingertip"], "poses": {"bent (joint1 = 1.5)": {"joint1": 1.5}}},
    "so101": {
        "ee": ["gripper_frame"],
        "poses": {
            "reach forward (lift 1.5708, elbow -1.5708)": {"shoulder_lift": math.pi / 2, "elbow_flex": -math.pi / 2},
            "gripper open (1.5)": {"gripper": 1.5},
        },
    },
    "arm7": {
        "ee": ["tcp"],
        "poses": {
            "home [0, -0.785, 0, -2.356, 0, 1.571, 0.785], fingers 0.04": {
                "joint1": 0.0, "joint2": -0.785, "joint3": 0.0, "joint4": -2.356, "joint5": 0.0,
                "joint6": 1.571, "joint7": 0.785, "finger_joint1": 0.04,
            },
        },
    },
    "quadruped12": {
        "ee": FEET_Q,
        "ground": True,
        "poses": {
            "stand (hip 0, thigh 0.9, calf -1.8)": {
                f"{leg}_{j}_joint": v for leg in ("FL", "FR", "RL", "RR") for j, v in (("hip", 0.0), ("thigh", 0.9), ("calf", -1.8))
            },
        },
    },
    "ant": {
        "ee": [],
        "ground": True,
        "poses": {
            "ankles mid-range (+-50 deg)": {
                "ankle_1": 50 * DEG, "ankle_2": -50 * DEG, "ankle_3": -50 * DEG, "ankle_4": 50 * DEG,
            },
        },
    },
}

# ------------------------------------------------------------------------------ math helpers


def mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def transpose(a):
    return [[a[j][i] for j in range(3)] for i in range(3)]


def rpy_mat(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]


def axis_angle(axis, angle):
    n = math.sqrt(sum(a * a for a in axis))
    x, y, z = (a / n for a in axis)
    c, s = math.cos(angle), math.sin(angle)
    t = 1 - c
    return [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]


def sym_eigenvalues(m):
    """Eigenvalues of a symmetric 3x3 matrix (closed form)."""
    p1 = m[0][1] ** 2 + m[0][2] ** 2 + m[1][2] ** 2
    if p1 == 0:
        return sorted([m[0][0], m[1][1], m[2][2]])
    q = (m[0][0] + m[1][1] + m[2][2]) / 3
    p2 = (m[0][0] - q) ** 2 + (m[1][1] - q) ** 2 + (m[2][2] - q) ** 2 + 2 * p1
    p = math.sqrt(p2 / 6)
    b = [[(m[i][j] - (q if i == j else 0)) / p for j in range(3)] for i in range(3)]
    det = (
        b[0][0] * (b[1][1] * b[2][2] - b[1][2] * b[2][1])
        - b[0][1] * (b[1][0] * b[2][2] - b[1][2] * b[2][0])
        + b[0][2] * (b[1][0] * b[2][1] - b[1][1] * b[2][0])
    )
    r = max(-1.0, min(1.0, det / 2))
    phi = math.acos(r) / 3
    e1 = q + 2 * p * math.cos(phi)
    e3 = q + 2 * p * math.cos(phi + 2 * math.pi / 3)
    return sorted([e1, 3 * q - e1 - e3, e3])


def floats(text, n, what):
    vals = [float(v) for v in (text or "").split()]
    if len(vals) != n:
        raise ValueError(f"{what}: expected {n} numbers, got {text!r}")
    return vals


def origin_of(el):
    o = el.find("origin") if el is not None else None
    if o is None:
        return [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    return floats(o.get("xyz", "0 0 0"), 3, "origin xyz"), floats(o.get("rpy", "0 0 0"), 3, "origin rpy")


# ------------------------------------------------------------------------------ shapes


class Shape:
    def __init__(self, kind, dims, xyz, rpy):
        self.kind, self.dims, self.xyz, self.rot = kind, dims, xyz, rpy_mat(*rpy)

    def volume(self):
        if self.kind == "box":
            return self.dims[0] * self.dims[1] * self.dims[2]
        if self.kind == "sphere":
            return 4 / 3 * math.pi * self.dims[0] ** 3
        r, h = self.dims
        v = math.pi * r * r * h
        return v + (4 / 3 * math.pi * r**3 if self.kind == "capsule" else 0.0)

    def moments(self, m):
        if self.kind == "box":
            x, y, z = self.dims
            return [m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12]
        if self.kind == "sphere":
            return [0.4 * m * self.dims[0] ** 2] * 3
        r, h = self.dims
        if self.kind == "cylinder":
            t = m * (3 * r * r + h * h) / 12
            return [t, t, m * r * r / 2]
        # capsule: cylinder + two hemispheres (parallel-axis from the hemispheres' centroids)
        vc, vs = math.pi * r * r * h, 4 / 3 * math.pi * r**3
        mc, ms = m * vc / (vc + vs), m * vs / (vc + vs)
        t = mc * (h * h / 12 + r * r / 4) + ms * (0.4 * r * r + h * h / 4 + 3 * h * r / 8)
        return [t, t, mc * r * r / 2 + ms * 0.4 * r * r]

    def half_extent(self):
        if self.kind == "box":
            return [d / 2 for d in self.dims]
        if self.kind == "sphere":
            return [self.dims[0]] * 3
        r, h = self.dims
        return [r, r, h / 2 + (r if self.kind == "capsule" else 0.0)]

    def bounding_radius(self):
        return math.sqrt(sum(e * e for e in self.half_extent()))

    def contains(self, p, shrink):
        """p in shape-local coordinates; the shape shrunk by `shrink` m."""
        x, y, z = p
        if self.kind == "box":
            return all(abs(c) <= d / 2 - shrink for c, d in zip(p, self.dims))
        if self.kind == "sphere":
            return x * x + y * y + z * z <= (self.dims[0] - shrink) ** 2
        r, h = self.dims
        if self.kind == "cylinder":
            return x * x + y * y <= (r - shrink) ** 2 and abs(z) <= h / 2 - shrink
        zc = max(-h / 2, min(h / 2, z))
        return x * x + y * y + (z - zc) ** 2 <= (r - shrink) ** 2

    def grid(self, n):
        ex = self.half_extent()
        pts = []
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    p = [ex[0] * (2 * i / (n - 1) - 1), ex[1] * (2 * j / (n - 1) - 1), ex[2] * (2 * k / (n - 1) - 1)]
                    if self.contains(p, 0.0):
                        pts.append(p)
        return pts


def parse_geometry(el, where, errors):
    g = el.find("geometry")
    if g is None or len(list(g)) != 1:
        errors.append(f"{where}: needs exactly one <geometry> child")
        return None
    prim = list(g)[0]
    kind = prim.tag
    if kind not in PRIMITIVES:
        errors.append(f"{where}: geometry <{kind}> is not a primitive (box, sphere, cylinder, capsule)")
        return None
    try:
        if kind == "box":
            dims = floats(prim.get("size"), 3, f"{where} box size")
        elif kind == "sphere":
            dims = [float(prim.get("radius"))]
        else:
            dims = [float(prim.get("radius")), float(prim.get("length"))]
    except (TypeError, ValueError) as e:
        errors.append(f"{where}: bad {kind} size ({e})")
        return None
    if any(not d > 0 for d in dims):
        errors.append(f"{where}: {kind} sizes must be > 0, got {dims}")
        return None
    xyz, rpy = origin_of(el)
    return Shape(kind, dims, xyz, rpy)


# ------------------------------------------------------------------------------ model


class Model:
    def __init__(self, path: Path):
        self.path = path
        self.errors: list[str] = []
        self.notes: list[str] = []
        root = ET.parse(path).getroot()
        if root.tag != "robot" or not root.get("name"):
            self.errors.append("root element must be <robot name=...>")
        self.name = root.get("name", "?")
        colours = {m.get("name"): m.find("color") for m in root.findall("material")}
        self.links, self.joints = {}, {}
        for el in root.findall("link"):
            name = el.get("name")
            if name in self.links:
                self.errors.append(f"duplicate link {name}")
            self.links[name] = self.parse_link(el, colours)
        for el in root.findall("joint"):
            name = el.get("name")
            if name in self.joints:
                self.errors.append(f"duplicate joint {name}")
            self.joints[name] = self.parse_joint(el)
        self.check_tree()

    def parse_link(self, el, colours):
        name = el.get("name")
        link = {"name": name, "mass": None, "visuals": [], "collisions": []}
        inertial = el.find("inertial")
        if inertial is None:
            self.errors.append(f"link {name}: no <inertial>")
        else:
            try:
                link["mass"] = float(inertial.find("mass").get("value"))
                it = inertial.find("inertia")
                vals = {k: float(it.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
                link["com"], rpy = origin_of(inertial)
                local = [
                    [vals["ixx"], vals["ixy"], vals["ixz"]],
                    [vals["ixy"], vals["iyy"], vals["iyz"]],
                    [vals["ixz"], vals["iyz"], vals["izz"]],
                ]
                r = rpy_mat(*rpy)
                link["inertia"] = mat_mul(mat_mul(r, local), transpose(r))  # in the link frame
            except (AttributeError, TypeError, ValueError) as e:
                self.errors.append(f"link {name}: bad inertial ({e})")
                link["mass"] = None
            if link["mass"] is not None:
                if not link["mass"] > 0:
                    self.errors.append(f"link {name}: mass must be > 0, got {link['mass']}")
                ev = sym_eigenvalues(link["inertia"])
                if ev[0] <= 0:
                    self.errors.append(f"link {name}: principal moments must be > 0, got {ev}")
                elif ev[0] + ev[1] < ev[2] * (1 - 1e-9):
                    self.errors.append(f"link {name}: principal moments {ev} break the triangle inequality")
        for i, v in enumerate(el.findall("visual")):
            where = f"link {name} visual {i}"
            s = parse_geometry(v, where, self.errors)
            if s:
                link["visuals"].append(s)
            mat = v.find("material")
            colour = None
            if mat is not None:
                colour = mat.find("color")
                if colour is None:
                    colour = colours.get(mat.get("name"))
            if colour is None or len((colour.get("rgba") or "").split()) != 4:
                self.errors.append(f"{where}: no <material> with <color rgba>")
        for i, c in enumerate(el.findall("collision")):
            s = parse_geometry(c, f"link {name} collision {i}", self.errors)
            if s:
                link["collisions"].append(s)
        return link

    def parse_joint(self, el):
        name, kind = el.get("name"), el.get("type")
        j = {"name": name, "type": kind, "mimic": None, "axis": [1.0, 0.0, 0.0], "limit": None}
        if kind not in JOINT_TYPES:
            self.errors.append(f"joint {name}: unknown type {kind!r}")
        p, c = el.find("parent"), el.find("child")
        j["parent"] = p.get("link") if p is not None else None
        j["child"] = c.get("link") if c is not None else None
        j["xyz"], j["rpy"] = origin_of(el)
        moving = kind in ("revolute", "continuous", "prismatic")
        if moving:
            a = el.find("axis")
            if a is not None:
                j["axis"] = floats(a.get("xyz"), 3, f"joint {name} axis")
            n = math.sqrt(sum(x * x for x in j["axis"]))
            if abs(n - 1) > 1e-6:
                self.errors.append(f"joint {name}: axis {j['axis']} is not a unit vector")
            if sorted(abs(x) for x in j["axis"]) != [0.0, 0.0, 1.0]:
                self.errors.append(f"joint {name}: axis {j['axis']} is not along a principal direction")
            d = el.find("dynamics")
            if d is None or d.get("damping") is None or d.get("friction") is None:
                self.errors.append(f"joint {name}: needs <dynamics damping friction>")
            elif float(d.get("damping")) < 0 or float(d.get("friction")) < 0:
                self.errors.append(f"joint {name}: damping and friction must be >= 0")
        lim = el.find("limit")
        if kind in ("revolute", "prismatic"):
            if lim is None:
                self.errors.append(f"joint {name}: {kind} joint needs <limit>")
            else:
                try:
                    lo, hi = float(lim.get("lower")), float(lim.get("upper"))
                    eff, vel = float(lim.get("effort")), float(lim.get("velocity"))
                    j["limit"] = (lo, hi, eff, vel)
                    if not lo < hi:
                        self.errors.append(f"joint {name}: lower {lo} must be < upper {hi}")
                    if not (eff > 0 and vel > 0):
                        self.errors.append(f"joint {name}: effort and velocity must be > 0")
                except (TypeError, ValueError):
                    self.errors.append(f"joint {name}: <limit> needs lower, upper, effort, velocity")
        m = el.find("mimic")
        if m is not None:
            j["mimic"] = (m.get("joint"), float(m.get("multiplier", "1")), float(m.get("offset", "0")))
        return j

    def check_tree(self):
        children = {}
        for j in self.joints.values():
            for end in ("parent", "child"):
                if j[end] not in self.links:
                    self.errors.append(f"joint {j['name']}: {end} link {j[end]!r} does not exist")
            if j["child"] in children:
                self.errors.append(f"link {j['child']} is the child of two joints")
            children[j["child"]] = j["name"]
            if j["mimic"]:
                target = self.joints.get(j["mimic"][0])
                if target is None or target is j:
                    self.errors.append(f"joint {j['name']}: mimic target {j['mimic'][0]!r} missing")
        roots = [n for n in self.links if n not in children]
        if len(roots) != 1:
            self.errors.append(f"expected one root link, found {roots}")
            self.root = roots[0] if roots else None
            return
        self.root = roots[0]
        for j in self.joints.values():
            if j["mimic"] and self.joints.get(j["mimic"][0], {}).get("mimic"):
                self.errors.append(f"joint {j['name']}: mimics a mimic joint")
        seen, stack = set(), [self.root]
        while stack:
            n = stack.pop()
            if n in seen:
                self.errors.append("cycle in the kinematic graph")
                break
            seen.add(n)
            stack += [j["child"] for j in self.joints.values() if j["parent"] == n]
        missing = set(self.links) - seen
        if missing:
            self.errors.append(f"links not reachable from the root {self.root}: {sorted(missing)}")

    # -------------------------------------------------------------------------- kinematics

    def frames(self, q):
        q = dict(q)
        for j in self.joints.values():
            if j["mimic"]:
                src, mult, off = j["mimic"]
                q[j["name"]] = mult * q.get(src, 0.0) + off
        out = {self.root: ([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]], [0.0, 0.0, 0.0])}
        stack = [self.root]
        while stack:
            n = stack.pop()
            rp, pp = out[n]
            for j in self.joints.values():
                if j["parent"] != n:
                    continue
                r = mat_mul(rp, rpy_mat(*j["rpy"]))
                p = [a + b for a, b in zip(pp, mat_vec(rp, j["xyz"]))]
                v = q.get(j["name"], 0.0)
                if j["type"] in ("revolute", "continuous"):
                    r = mat_mul(r, axis_angle(j["axis"], v))
                elif j["type"] == "prismatic":
                    p = [a + b for a, b in zip(p, mat_vec(r, [x * v for x in j["axis"]]))]
                out[j["child"]] = (r, p)
                stack.append(j["child"])
        return out

    def world_shape(self, frames, link, s):
        r, p = frames[link]
        return mat_mul(r, s.rot), [a + b for a, b in zip(p, mat_vec(r, s.xyz))]

    def overlaps(self, q, n=9, shrink=1e-4):
        frames = self.frames(q)
        adjacent = {frozenset((j["parent"], j["child"])) for j in self.joints.values()}
        names = list(self.links)
        found = []
        for a_i, a in enumerate(names):
            for b in names[a_i + 1 :]:
                if frozenset((a, b)) in adjacent:
                    continue
                hits = 0
                for sa in self.links[a]["collisions"]:
                    ra, pa = self.world_shape(frames, a, sa)
                    for sb in self.links[b]["collisions"]:
                        rb, pb = self.world_shape(frames, b, sb)
                        dist = math.sqrt(sum((x - y) ** 2 for x, y in zip(pa, pb)))
                        if dist > sa.bounding_radius() + sb.bounding_radius():
                            continue
                        for (s1, r1, p1), (s2, r2, p2) in (((sa, ra, pa), (sb, rb, pb)), ((sb, rb, pb), (sa, ra, pa))):
                            r2t = transpose(r2)
                            for pt in s1.grid(n):
                                w = [x + y for x, y in zip(p1, mat_vec(r1, pt))]
                                if s2.contains(mat_vec(r2t, [x - y for x, y in zip(w, p2)]), shrink):
                                    hits += 1
                if hits:
                    found.append((a, b, hits))
        return found

    def lowest_point(self, q):
        """Lowest world z of any collision shape (exact support function of each primitive)."""
        frames = self.frames(q)
        low = math.inf
        for name, link in self.links.items():
            for s in link["collisions"]:
                r, p = self.world_shape(frames, name, s)
                if s.kind == "box":
                    depth = sum(abs(r[2][k]) * s.dims[k] / 2 for k in range(3))
                elif s.kind == "sphere":
                    depth = s.dims[0]
                else:
                    rad, h = s.dims
                    az = abs(r[2][2])  # world-z component of the shape's axis
                    if s.kind == "capsule":
                        depth = az * h / 2 + rad
                    else:
                        depth = az * h / 2 + rad * math.sqrt(max(0.0, 1 - az * az))
                low = min(low, p[2] - depth)
        return low

    def inertia_from_collisions(self, name):
        link = self.links[name]
        shapes = link["collisions"]
        if not shapes or link["mass"] is None:
            return None
        vols = [s.volume() for s in shapes]
        masses = [link["mass"] * v / sum(vols) for v in vols]
        com = [sum(m * s.xyz[k] for m, s in zip(masses, shapes)) / link["mass"] for k in range(3)]
        t = [[0.0] * 3 for _ in range(3)]
        for m, s in zip(masses, shapes):
            pm = s.moments(m)
            rot = mat_mul(mat_mul(s.rot, [[pm[i] if i == j else 0 for j in range(3)] for i in range(3)]), transpose(s.rot))
            d = [s.xyz[k] - com[k] for k in range(3)]
            dd = sum(x * x for x in d)
            for i in range(3):
                for j in range(3):
                    t[i][j] += rot[i][j] + m * ((dd if i == j else 0) - d[i] * d[j])
        return com, t

    def check_inertia_consistency(self):
        for name, link in self.links.items():
            if link["mass"] is None or "inertia" not in link:
                continue
            got = self.inertia_from_collisions(name)
            if got is None:
                continue
            com, t = got
            scale = max(abs(t[i][i]) for i in range(3))
            dev = max(abs(t[i][j] - link["inertia"][i][j]) for i in range(3) for j in range(3)) / scale
            dcom = math.sqrt(sum((a - b) ** 2 for a, b in zip(com, link["com"])))
            if dev > 0.01 or dcom > 1e-4:
                self.errors.append(
                    f"link {name}: inertial differs from its collision primitives at uniform density "
                    f"(tensor {dev:.1%}, centre of mass {dcom * 1000:.1f} mm)"
                )


# ------------------------------------------------------------------------------ report


def fmt_p(p):
    return "(" + ", ".join(f"{x:+.4f}" for x in p) + ")"


def report(path: Path) -> bool:
    try:
        m = Model(path)
    except (ET.ParseError, ValueError) as e:
        print(f"{path.name}: FAIL\n  {e}")
        return False
    if not m.errors:
        m.check_inertia_consistency()
    info = KNOWN.get(m.name, {"ee": [], "poses": {}})
    kinds = {}
    for j in m.joints.values():
        kinds[j["type"]] = kinds.get(j["type"], 0) + 1
    actuated = [j["name"] for j in m.joints.values() if j["type"] in ("revolute", "continuous", "prismatic") and not j["mimic"]]
    mimics = [j["name"] for j in m.joints.values() if j["mimic"]]
    mass = sum(link["mass"] or 0 for link in m.links.values())
    kind_text = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    print(f"{m.name} ({path.name})")
    print(f"  links {len(m.links)}, joints {len(m.joints)} ({kind_text}), root '{m.root}'")
    print(f"  actuated DoF {len(actuated)}: {' '.join(actuated)}" + (f"; mimic: {' '.join(mimics)}" if mimics else ""))
    print(f"  total mass {mass:.4f} kg")
    if m.errors:
        for e in m.errors:
            print(f"  ERROR {e}")
        print("  FAIL")
        return False
    poses = {"zero pose": {}}
    poses.update(info["poses"])
    ok = True
    for pose_name, q in poses.items():
        frames = m.frames(q)
        print(f"  {pose_name}:")
        for ee in info["ee"]:
            p = frames[ee][1]
            line = f"    {ee} at {fmt_p(p)} m"
            if not info.get("ground"):
                # horizontal distance from the first joint axis (the base's vertical axis)
                first = next(j for j in m.joints.values() if j["parent"] == m.root)
                base = frames[first["child"]][1]
                line += f", {math.hypot(p[0] - base[0], p[1] - base[1]):.4f} m horizontally from the first joint"
                line += f", {math.dist(p, base):.4f} m from it"
            print(line)
        if info.get("ground"):
            low = m.lowest_point(q)
            print(f"    lowest collision point {low:+.4f} m: root origin {-low:.4f} m above flat ground")
        bad = m.overlaps(q)
        if bad:
            ok = False
            for a, b, hits in bad:
                print(f"    ERROR overlap between non-adjacent links {a} and {b} ({hits} sample points)")
        else:
            print("    no overlap between non-adjacent links")
    print("  OK" if ok else "  FAIL")
    return ok


def main(argv):
    paths = [Path(a) for a in argv] or sorted(HERE.glob("*.urdf"))
    results = [report(p) for p in paths]
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
