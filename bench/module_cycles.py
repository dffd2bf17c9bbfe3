#!/usr/bin/env python3
"""Lists dependency cycles between sibling modules inside each crate of the workspace.

A module depends on another when its code names it (`use crate::a::b`, `super::x`, a path in
an expression); comments and doc links do not count, nor does a file's `mod tests`. Edges are compared between siblings: `a::b::c` naming `a::d::e` makes
`a::b` depend on `a::d`; a module naming its own parent or child does not count. Prints every
cycle (strongly connected set of siblings) and exits 1 if there is one.

Usage: python3 bench/module_cycles.py [CRATE_SRC_DIR ...]   (default: every crate's src/)
"""
import os, re, sys

def modules(src):
    """Maps module path (tuple) -> file for a crate's src dir."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'):
                rel = rel[:-1]
            if rel and rel[0] in ('bin',):
                continue
            out[tuple(rel)] = os.path.join(root, f)
    return out

PATH = re.compile(r'\b(crate|super|self)((?:::\{?[A-Za-z_][A-Za-z0-9_]*)+)')

def resolve(mod, head, rest, known):
    if head == 'crate':
        base = ()
    elif head == 'self':
        base = mod
    else:
        base = mod[:-1]
        # super::super::...
        while rest and rest[0] == 'super':
            base, rest = base[:-1], rest[1:]
    path = base + tuple(rest)
    # longest known module prefix
    for n in range(len(path), -1, -1):
        if path[:n] in known:
            return path[:n]
    return None

def edges(mods):
    known = set(mods)
    deps = {m: set() for m in mods}
    for m, f in mods.items():
        text = open(f, encoding='utf-8').read()
        # drop the `#[cfg(test)] mod tests` block at the end of a file: tests may use anything
        cut = text.find('#[cfg(test)]\nmod tests')
        if cut >= 0:
            text = text[:cut]
        code = '\n'.join(l for l in text.splitlines() if not l.lstrip().startswith('//'))
        for head, tail in PATH.findall(code):
            segs = [s.strip('{') for s in tail.split('::') if s.strip('{')]
            target = resolve(m, head, segs, known)
            if target is not None and target != m:
                deps[m].add(target)
    return deps

def sibling_edges(deps):
    out = {}
    for a, bs in deps.items():
        for b in bs:
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            if n == len(a) or n == len(b):
                continue  # parent/child
            out.setdefault((a[:n + 1]), set()).add(b[:n + 1])
    return out

def sccs(graph):
    index, low, stack, on, res, i = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                res.append(comp)
    for v in list(graph):
        if v not in index:
            visit(v)
    return res

def main(dirs):
    found = 0
    for src in dirs:
        graph = sibling_edges(edges(modules(src)))
        for comp in sccs(graph):
            found += 1
            names = sorted('::'.join(c) for c in comp)
            print(f'{src}: cycle between {", ".join(names)}')
            for a in sorted(comp):
                for b in sorted(graph.get(a, ())):
                    if b in comp:
                        print(f'    {"::".join(a)} -> {"::".join(b)}')
    print(f'module_cycles: {found} cycle(s) in {len(dirs)} crate(s)')
    return 1 if found else 0

if __name__ == '__main__':
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = sys.argv[1:] or [os.path.join(root, d, 'src') for d in ('.', 'robots', 'sim', 'policies', 'algos', 'dataset', 'deploy', 'python')]
    sys.exit(main([os.path.normpath(d) for d in dirs]))
