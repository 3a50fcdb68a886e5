"""Where each note of a lineage drawing goes: geometry only, so a thousand notes stay readable.

Owns: splitting the notes into lineages (the groups the supersession edges connect) and the
notes no edge touches; laying each lineage out left to right, predecessors before successors
(one column per step, a long chain wrapped onto further rows); packing short lineages side by
side on shelves the width of the page; and the grid the unconnected notes fill. Does not own:
which edges exist or what a note's standing is (`recall.lineage`, through `gather`), or how
anything is drawn (`page`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Box", "Grid", "Lineage", "Placed", "grid", "lineages"]

#: The drawing's width in SVG units; the page scales it to the window.
WIDTH = 1360
PAD = 12
NODE_W, NODE_H = 176, 58
#: A note a later one replaced, drawn as one line: the chain's last note carries the detail.
SMALL_W, SMALL_H = 176, 28
#: Room between two steps of a chain, for the arrow and the date of the edge.
STEP_GAP = 56
ROW_GAP = 12
#: Between the rows of a chain wrapped at the page's edge.
WRAP_GAP = 26
#: A lineage's caption above it, and the room between lineages on a shelf and between shelves.
CAPTION = 18
SIDE_GAP = 20
SHELF_GAP = 18
TILE_W, TILE_H, TILE_GAP = 216, 24, 6


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass
class Lineage:
    """One group of notes the edges connect, placed: `boxes` by note index, `columns` by note
    index (its step along the chain, before wrapping), `x`/`y` the group's corner (its caption
    sits there, the boxes below it)."""

    nodes: list[int]
    boxes: dict[int, Box] = field(default_factory=dict)
    columns: dict[int, int] = field(default_factory=dict)
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0


@dataclass
class Placed:
    """Every lineage placed on shelves, and the drawing's height."""

    groups: list[Lineage]
    singles: list[int]
    width: float
    height: float


@dataclass
class Grid:
    """Tiles in rows: `boxes` in the order given, and the drawing's height."""

    boxes: list[Box]
    width: float
    height: float


def _components(n: int, edges: Sequence[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _layers(
    nodes: list[int], edges: Sequence[tuple[int, int]], order: dict[int, int]
) -> dict[int, int]:
    """Each node's step: the longest run of predecessors before it. Nodes on a cycle (a note
    chain that loops, SPEC §2.4) take the step after those of their placed predecessors."""
    inside = set(nodes)
    preds: dict[int, list[int]] = {i: [] for i in nodes}
    succs: dict[int, list[int]] = {i: [] for i in nodes}
    for a, b in edges:
        if a in inside and b in inside and a != b:
            preds[b].append(a)
            succs[a].append(b)
    waiting = {i: len(set(preds[i])) for i in nodes}
    ready = sorted((i for i in nodes if waiting[i] == 0), key=order.__getitem__)
    layer: dict[int, int] = {}
    while True:
        while ready:
            i = ready.pop(0)
            layer[i] = max((layer[p] + 1 for p in preds[i] if p in layer), default=0)
            for s in sorted(set(succs[i]), key=order.__getitem__):
                waiting[s] -= 1
                if waiting[s] == 0:
                    ready.append(s)
        left = [i for i in nodes if i not in layer]
        if not left:
            return layer
        # A cycle: start it at its node placed in the given order first.
        first = min(left, key=order.__getitem__)
        waiting[first] = 0
        ready.append(first)


def _place(
    group: Lineage,
    edges: Sequence[tuple[int, int]],
    order: dict[int, int],
    sizes: Sequence[tuple[float, float]],
) -> None:
    """Lay one lineage out from (0, 0): steps left to right, each as wide as its widest note,
    wrapped onto a further row where the page ends; a row of notes shares one middle line, so
    the arrows along a chain run straight."""
    layer = _layers(group.nodes, edges, order)
    steps: dict[int, list[int]] = {}
    for i in sorted(group.nodes, key=order.__getitem__):
        steps.setdefault(layer[i], []).append(i)
    # Within a step, follow the predecessors' rows (fewer crossings).
    row_of: dict[int, float] = {}
    preds: dict[int, list[int]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    for step in sorted(steps):
        members = steps[step]
        members.sort(
            key=lambda i: (
                sum(row_of[p] for p in preds.get(i, []) if p in row_of)
                / max(1, sum(1 for p in preds.get(i, []) if p in row_of)),
                order[i],
            )
        )
        for r, i in enumerate(members):
            row_of[i] = r
    width = {s: max(sizes[i][0] for i in steps[s]) for s in steps}
    inner = WIDTH - 2 * PAD
    blocks: list[list[int]] = [[]]
    used = 0.0
    for s in sorted(steps):
        need = width[s] + (STEP_GAP if blocks[-1] else 0)
        if blocks[-1] and used + need > inner:
            blocks.append([])
            used, need = 0.0, width[s]
        blocks[-1].append(s)
        used += need
    y = float(CAPTION)
    widest = 0.0
    for k, block in enumerate(blocks):
        rows = max(len(steps[s]) for s in block)
        heights = [
            max((sizes[steps[s][r]][1] for s in block if r < len(steps[s])), default=0.0)
            for r in range(rows)
        ]
        x = 0.0
        for s in block:
            top = y
            for r, i in enumerate(steps[s]):
                w, h = sizes[i]
                group.boxes[i] = Box(x, top + (heights[r] - h) / 2, w, h)
                group.columns[i] = s
                top += heights[r] + ROW_GAP
            x += width[s] + STEP_GAP
        widest = max(widest, x - STEP_GAP)
        y += sum(heights) + ROW_GAP * (rows - 1) + (WRAP_GAP if k < len(blocks) - 1 else 0)
    group.w = widest
    group.h = y


def lineages(
    n: int,
    edges: Sequence[tuple[int, int]],
    order: Sequence[int],
    sizes: Sequence[tuple[float, float]],
    first: Sequence[bool] = (),
) -> Placed:
    """Place `n` notes joined by `edges` (predecessor, successor), each note the (width,
    height) `sizes` gives it. `order` ranks the notes (ties and reading order follow it).
    Lineages holding a note `first` marks come first, then those with the most notes; short
    ones share a shelf; notes no edge touches are returned apart, in `order`."""
    rank = {i: r for r, i in enumerate(order)}
    groups = []
    singles = []
    components = _components(n, edges)
    # Each lineage is laid out with its own edges only: linear in the notes and edges.
    home = {i: k for k, nodes in enumerate(components) for i in nodes}
    own: dict[int, list[tuple[int, int]]] = {}
    for a, b in edges:
        own.setdefault(home[a], []).append((a, b))
    for k, nodes in enumerate(components):
        if len(nodes) == 1:
            singles.append(nodes[0])
            continue
        group = Lineage(nodes=nodes)
        _place(group, own.get(k, []), rank, sizes)
        groups.append(group)
    singles.sort(key=rank.__getitem__)
    marked = set(i for i, m in enumerate(first) if m)
    groups.sort(
        key=lambda g: (
            not marked.intersection(g.nodes),
            -len(g.nodes),
            -g.h,
            min(rank[i] for i in g.nodes),
        )
    )
    # Shelves: left to right while a lineage fits, then a new shelf as tall as its tallest.
    x, y, shelf = float(PAD), float(PAD), 0.0
    for group in groups:
        if x > PAD and x + group.w > WIDTH - PAD:
            x, y, shelf = float(PAD), y + shelf + SHELF_GAP, 0.0
        group.x, group.y = x, y
        group.boxes = {i: Box(b.x + x, b.y + y, b.w, b.h) for i, b in group.boxes.items()}
        x += group.w + SIDE_GAP
        shelf = max(shelf, group.h)
    height = y + shelf + PAD if groups else 0.0
    return Placed(groups=groups, singles=singles, width=WIDTH, height=height)


def grid(count: int, tile_w: float = TILE_W, tile_h: float = TILE_H) -> Grid:
    """`count` tiles in rows across the drawing's width."""
    inner = WIDTH - 2 * PAD
    per_row = max(1, int((inner + TILE_GAP) // (tile_w + TILE_GAP)))
    boxes = [
        Box(
            PAD + (k % per_row) * (tile_w + TILE_GAP),
            PAD + (k // per_row) * (tile_h + TILE_GAP),
            tile_w,
            tile_h,
        )
        for k in range(count)
    ]
    rows = (count + per_row - 1) // per_row
    return Grid(
        boxes=boxes,
        width=WIDTH,
        height=2 * PAD + rows * (tile_h + TILE_GAP) - TILE_GAP if count else 0,
    )
