"""Requisite graph and execution order of low chunks.

Salt 3008 orders chunks topologically over their requisites; among the chunks
whose requisites are all placed, the one with the smallest sort key goes next.
The sort key is ``(order, own order, "state+name+fun", tag)`` where ``order`` is
the chunk's own order pulled down to the smallest order of the chunks that
depend on it (so an ``order: 2`` state drags what it requires ahead of an
``order: 5`` one).  A ``prereq`` adds a test-mode "check" run of the prereq'd
state before the state that declared the prereq.

The graph is also what the executor walks: ``Lowstate.deps[i]`` lists, for the
run at position i, every (requisite type, position) it depends on.
"""

from __future__ import annotations

import fnmatch
import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# Requisite types in Salt's precedence order; the weight is the index.
REQ_TYPES = ("onfail", "onfail_any", "onfail_all", "require", "require_any", "onchanges", "onchanges_any",
             "watch", "watch_any", "prereq", "prerequired", "listen")
WEIGHT = {name: i for i, name in enumerate(REQ_TYPES)}
# Requisites that create graph edges (listen acts after the run, not on order).
EDGE_TYPES = ("require", "require_any", "watch", "watch_any", "prereq", "onfail", "onfail_any", "onfail_all",
              "onchanges", "onchanges_any")


def tag(chunk: dict[str, Any]) -> str:
    return f"{chunk['state']}_|-{chunk['__id__']}_|-{chunk['name']}_|-{chunk['fun']}"


def _is_pattern(value: str) -> bool:
    return any(ch in value for ch in "*?[]")


@dataclass
class Run:
    """One entry of the execution order: a chunk, or the test-mode check of a prereq'd chunk."""

    chunk: int  # index into Lowstate.chunks
    prereq_check: bool = False


@dataclass
class Lowstate:
    """Ordered low chunks plus the requisite edges the executor needs."""

    chunks: list[dict[str, Any]]
    runs: list[Run]
    # deps[r] = [(req_type, run_index), ...] : what run r depends on, per requisite type
    deps: list[list[tuple[str, int]]] = field(default_factory=list)

    def ordered_chunks(self) -> list[dict[str, Any]]:
        """Salt's show_lowstate list: every run's chunk, prereq checks included."""
        return [self.chunks[r.chunk] for r in self.runs]


class RequisiteError(Exception):
    def __init__(self, message: str, chunk: dict[str, Any]):
        super().__init__(message)
        self.message = message
        self.chunk = chunk


class _Graph:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.out: dict[str, dict[str, list[str]]] = {}
        self.inn: dict[str, dict[str, list[str]]] = {}

    def add_node(self, node: str, **attrs: Any) -> None:
        self.nodes.setdefault(node, {}).update(attrs)
        self.out.setdefault(node, {})
        self.inn.setdefault(node, {})

    def add_edge(self, src: str, dst: str, kind: str) -> None:
        self.add_node(src)
        self.add_node(dst)
        keys = self.out[src].setdefault(dst, [])
        if kind not in keys:
            keys.append(kind)
            self.inn[dst].setdefault(src, []).append(kind)

    def in_edges(self, node: str) -> Iterable[tuple[str, str]]:
        for src, kinds in self.inn.get(node, {}).items():
            for kind in kinds:
                yield src, kind

    def out_edges(self, node: str) -> Iterable[tuple[str, str]]:
        for dst, kinds in self.out.get(node, {}).items():
            for kind in kinds:
                yield dst, kind

    def find_cycle(self) -> list[tuple[str, str, str]]:
        white, gray, black = 0, 1, 2
        color = dict.fromkeys(self.nodes, white)
        parent: dict[str, tuple[str, str]] = {}
        for start in self.nodes:
            if color[start] != white:
                continue
            stack = [(start, iter(list(self.out_edges(start))))]
            color[start] = gray
            while stack:
                node, edges = stack[-1]
                advanced = False
                for dst, kind in edges:
                    if color[dst] == gray:
                        cycle = [(node, dst, kind)]
                        cur = node
                        while cur != dst:
                            prev, pkind = parent[cur]
                            cycle.append((prev, cur, pkind))
                            cur = prev
                        return list(reversed(cycle))
                    if color[dst] == white:
                        parent[dst] = (node, kind)
                        color[dst] = gray
                        stack.append((dst, iter(list(self.out_edges(dst)))))
                        advanced = True
                        break
                if not advanced:
                    color[node] = black
                    stack.pop()
        return []


class CycleError(Exception):
    def __init__(self, members: list[tuple[dict[str, Any], str, dict[str, Any]]]):
        super().__init__("requisite cycle")
        self.members = members


def _prereq_node(node: str) -> str:
    return f"{node}_|-__prereq_test__"


def _normalise_order(value: Any, cap: int) -> float:
    if value is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        if value == "last":
            return cap + 1000000
        if value == "first":
            return 0
        return cap
    return value


class Orderer:
    """Builds the requisite graph of a list of chunks and orders it."""

    def __init__(self, chunks: list[dict[str, Any]], has_mod_watch: Callable[[str], bool]):
        self.chunks = chunks
        self.has_mod_watch = has_mod_watch
        self.graph = _Graph()
        self.lookup: dict[tuple[str, str], list[str]] = {}
        self.by_sls: dict[str, list[str]] = {}
        self.node_chunk: dict[str, int] = {}
        for index, chunk in enumerate(chunks):
            node = tag(chunk)
            self.graph.add_node(node, chunk=index)
            self.node_chunk.setdefault(node, index)
            for key in ((chunk["state"], str(chunk["name"])), (chunk["state"], str(chunk["__id__"])),
                        ("id", str(chunk["__id__"])), ("id", str(chunk["name"]))):
                bucket = self.lookup.setdefault(key, [])
                if node not in bucket:
                    bucket.append(node)
            sls_names = [chunk.get("__sls__")] + list(chunk.get("__sls_included_from__") or [])
            for sls in sls_names:
                if sls:
                    bucket = self.by_sls.setdefault(sls, [])
                    if node not in bucket:
                        bucket.append(node)

    # -- edges --------------------------------------------------------------------
    def _add_reqs(self, node: str, chunk: dict[str, Any], kind: str, targets: list[str]) -> None:
        for target in targets:
            if kind == "prereq":
                self._add_prereq(node, target)
                continue
            if chunk.get("__prereq__"):
                self.graph.add_edge(target, _prereq_node(node), kind)
            self.graph.add_edge(target, node, kind)

    def _add_prereq(self, node: str, target: str) -> None:
        self.chunks[self.graph.nodes[node]["chunk"]]["__prerequiring__"] = True
        target_chunk = self.graph.nodes[target]["chunk"]
        self.chunks[target_chunk]["__prereq__"] = True
        check = _prereq_node(target)
        if check not in self.graph.nodes:
            self.graph.add_node(check, chunk=target_chunk, check=True)
            for src, kind in list(self.graph.in_edges(target)):
                if kind != "prereq":
                    self.graph.add_edge(src, check, kind)
        self.graph.add_edge(check, node, "prereq")
        self.graph.add_edge(node, target, "require")
        own_check = _prereq_node(node)
        if own_check in self.graph.nodes:
            self.graph.add_edge(check, own_check, "prereq")

    def _targets(self, kind_key: str, value: str) -> list[str] | None:
        if kind_key == "sls":
            if _is_pattern(value):
                found: list[str] = []
                for sls, nodes in self.by_sls.items():
                    if fnmatch.fnmatch(sls, value):
                        found.extend(n for n in nodes if n not in found)
                return found
            return self.by_sls.get(value) or None
        if _is_pattern(value):
            found = []
            for (state, name), nodes in self.lookup.items():
                if state == kind_key and fnmatch.fnmatch(name, value):
                    found.extend(n for n in nodes if n not in found)
            return found or None
        return self.lookup.get((kind_key, value)) or None

    def add_requisites(self, index: int) -> None:
        chunk = self.chunks[index]
        if "watch" in chunk and not self.has_mod_watch(chunk["state"]):
            chunk.setdefault("require", []).extend(chunk.pop("watch"))
        if "watch_any" in chunk and not self.has_mod_watch(chunk["state"]):
            chunk.setdefault("require_any", []).extend(chunk.pop("watch_any"))
        node = tag(chunk)
        for kind in ("require", "require_any", "watch", "watch_any", "prereq", "onfail", "onfail_any",
                     "onfail_all", "onchanges", "onchanges_any"):
            refs = chunk.get(kind)
            if not refs:
                continue
            for ref in refs:
                if isinstance(ref, str):
                    ref = {"id": ref}
                if not isinstance(ref, dict) or not ref:
                    continue
                key, value = next(iter(ref.items()))
                key = str(key).split(".", 1)[0]
                if value is None:
                    continue
                if not isinstance(value, str):
                    raise RequisiteError(f"Requisite [{kind}: {key}] in state [{chunk['name']}] in SLS "
                                         f"[{chunk.get('__sls__')}] must have a string as the value", chunk)
                targets = self._targets(key, value)
                if targets is None:
                    raise RequisiteError(f"Referenced state does not exist for requisite [{kind}: ({key}: "
                                         f"{value})] in state [{chunk['name']}] in SLS [{chunk.get('__sls__')}]",
                                         chunk)
                self._add_reqs(node, chunk, kind, targets)

    # -- order ---------------------------------------------------------------------
    def _chunk_order(self, cap: int, node: str) -> tuple[float, float]:
        data = self.graph.nodes[node]
        chunk = self.chunks[data["chunk"]]
        order = _normalise_order(chunk.get("order"), cap)
        chunk["order"] = order
        name_order = chunk.pop("name_order", 0)
        if name_order:
            order += name_order / 10000.0
            chunk["order"] = order
        if order < 0:
            order += cap + 1000000
            chunk["order"] = order
        if "child_min" not in data:
            child_min = math.inf
            req_order = -math.inf
            for child, kind in self.graph.out_edges(node):
                weight = WEIGHT[kind]
                if req_order <= weight:
                    req_order = weight
                    child_chunk = self.chunks[self.graph.nodes[child]["chunk"]]
                    child_order = child_chunk.get("order", math.inf)
                    if child_order is None or not isinstance(child_order, (int, float)):
                        child_order = _normalise_order(child_order, cap)
                        child_chunk["order"] = child_order
                    child_min = min(child_min, child_order)
            data["child_min"] = child_min
            if order > child_min:
                order = child_min
        return (order, chunk["order"])

    def order(self) -> list[str]:
        cap = 1
        for chunk in self.chunks:
            value = chunk.get("order")
            if isinstance(value, int) and not isinstance(value, bool) and value > cap - 1 and value > 0:
                cap = value + 100
        indegree = {node: 0 for node in self.graph.nodes}
        for node in self.graph.nodes:
            for _src, _kind in self.graph.in_edges(node):
                indegree[node] += 1
        heap: list[tuple[Any, ...]] = []

        def push(node: str) -> None:
            chunk = self.chunks[self.graph.nodes[node]["chunk"]]
            label = f"{chunk['state']}{chunk['name']}{chunk['fun']}"
            heapq.heappush(heap, (self._chunk_order(cap, node), label, node))

        for node in self.graph.nodes:
            if indegree[node] == 0:
                push(node)
        ordered: list[str] = []
        while heap:
            *_, node = heapq.heappop(heap)
            ordered.append(node)
            for child, _kind in list(self.graph.out_edges(node)):
                indegree[child] -= 1
                if indegree[child] == 0:
                    push(child)
        if len(ordered) != len(self.graph.nodes):
            raise CycleError([(self.chunks[self.graph.nodes[dst]["chunk"]], kind,
                               self.chunks[self.graph.nodes[src]["chunk"]])
                              for src, dst, kind in self.graph.find_cycle()])
        return ordered

    def lowstate(self, ordered: list[str]) -> Lowstate:
        runs = [Run(self.graph.nodes[n]["chunk"], bool(self.graph.nodes[n].get("check"))) for n in ordered]
        position = {node: i for i, node in enumerate(ordered)}
        deps = [[(kind, position[src]) for src, kind in self.graph.in_edges(node)] for node in ordered]
        return Lowstate(self.chunks, runs, deps)


def order_chunks(chunks: list[dict[str, Any]], has_mod_watch: Callable[[str], bool]) -> tuple[Lowstate | None, list[Any]]:
    """Order chunks; returns (lowstate, errors). Errors are RequisiteError or CycleError."""
    orderer = Orderer(chunks, has_mod_watch)
    errors: list[Any] = []
    for index in range(len(chunks)):
        try:
            orderer.add_requisites(index)
        except RequisiteError as exc:
            errors.append(exc)
    try:
        ordered = orderer.order()
    except CycleError as exc:
        errors.append(exc)
        return None, errors
    return orderer.lowstate(ordered), errors
