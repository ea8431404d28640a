# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A DAG scheduler: start each node the moment all its dependencies succeeded.

Not level by level: a thread pool of ``concurrency`` workers; whenever a node
finishes, every dependent whose dependencies have now all succeeded is started
(ties broken by the given order). A failed node blocks exactly its transitive
dependents (``blocked_by`` names the failed root causes); independent branches run on.
Once the overall deadline has passed nothing new is started; what was not started is
reported ``blocked`` by the deadline. ``on_block(outcome)``, when given, is called (from the
scheduling thread) as soon as a node is blocked, or its ``blocked_by`` grows.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from ansible_collections.aicr.runtime.plugins.module_utils._common.dag import find_cycle
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

OK = "ok"
FAILED = "failed"
BLOCKED = "blocked"


class NodeOutcome(object):
    __slots__ = ("name", "status", "value", "error", "blocked_by", "started", "finished")

    def __init__(self, name):
        self.name = name
        self.status = None
        self.value = None
        self.error = None
        self.blocked_by = []
        self.started = None
        self.finished = None

    def as_dict(self):
        return {
            "name": self.name, "status": self.status, "error": self.error, "blocked_by": list(self.blocked_by),
            "started": self.started, "finished": self.finished,
        }


def validate_dag(order, deps):
    """Check every dependency is a node and there is no cycle; return the node set."""
    nodes = set(order)
    if len(nodes) != len(order):
        raise AicrError("components: duplicate component names in %s" % sorted(n for n in order if order.count(n) > 1))
    for name in order:
        for dep in deps.get(name, ()):
            if dep not in nodes:
                raise AicrError("components: %s depends on %s, which is not a scheduled component" % (name, dep), component=name, dependency=dep)
    cycle = find_cycle(order, deps)
    if cycle:
        raise AicrError("components: dependency cycle through %s and %s" % (cycle[-2], cycle[-1]), component=cycle[-2], dependency=cycle[-1])
    return nodes


def levels(order, deps):
    """Wave number per node: 1 + the highest wave of its dependencies (roots are wave 1)."""
    validate_dag(order, deps)
    level = {}

    def visit(name):
        if name not in level:
            level[name] = 1 + max([visit(d) for d in deps.get(name, ())] or [0])
        return level[name]

    for name in order:
        visit(name)
    return level


def run_dag(order, deps, work, concurrency=4, deadline=None, clock=time.monotonic, on_block=None):
    """Run ``work(name)`` for every node of the DAG; return {name: NodeOutcome}.

    ``work`` returns a value (success) or raises (failure: the exception's ``msg``
    or text is the error). ``deadline`` is a ``clock()`` value after which no node starts.
    ``on_block(outcome)`` is told about every node the moment it is blocked (by a failure or the deadline).
    """
    validate_dag(order, deps)
    concurrency = max(1, int(concurrency))
    rank = dict((name, i) for i, name in enumerate(order))
    dependents = dict((name, []) for name in order)
    waiting = {}
    for name in order:
        unique = sorted(set(deps.get(name, ())), key=rank.get)
        waiting[name] = len(unique)
        for dep in unique:
            dependents[dep].append(name)
    outcomes = dict((name, NodeOutcome(name)) for name in order)
    ready = [name for name in order if waiting[name] == 0]
    lock = threading.Lock()

    def notify(outcome):
        if on_block is not None:
            on_block(outcome)

    def block(root_failed, blocker):
        stack = list(dependents[blocker])
        while stack:
            node = stack.pop()
            outcome = outcomes[node]
            if outcome.status == BLOCKED:
                if root_failed not in outcome.blocked_by:
                    outcome.blocked_by.append(root_failed)
                    notify(outcome)
                continue
            if outcome.status is not None:
                continue
            outcome.status = BLOCKED
            outcome.blocked_by = [root_failed]
            notify(outcome)
            stack.extend(dependents[node])

    def call(name):
        outcome = outcomes[name]
        with lock:
            outcome.started = clock()
        try:
            outcome.value = work(name)
            outcome.status = OK
        except AicrError as exc:
            outcome.status, outcome.error = FAILED, exc.msg
        except Exception as exc:  # pylint: disable=broad-except
            outcome.status, outcome.error = FAILED, "%s: %s" % (exc.__class__.__name__, exc)
        with lock:
            outcome.finished = clock()
        return name

    running = set()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        while ready or running:
            while ready and len(running) < concurrency:
                ready.sort(key=rank.get)
                name = ready.pop(0)
                if outcomes[name].status == BLOCKED:
                    continue
                if deadline is not None and clock() >= deadline:
                    outcomes[name].status = BLOCKED
                    outcomes[name].error = "overall timeout reached before it could start"
                    notify(outcomes[name])
                    continue
                running.add(pool.submit(call, name))
            if not running:
                continue
            done, _pending = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                running.discard(future)
                name = future.result()
                if outcomes[name].status == OK:
                    for dep in dependents[name]:
                        waiting[dep] -= 1
                        if waiting[dep] == 0 and outcomes[dep].status is None:
                            ready.append(dep)
                else:
                    block(name, name)
    for name in order:
        outcome = outcomes[name]
        if outcome.status is None:
            outcome.status = BLOCKED
            outcome.error = outcome.error or "not started"
    return outcomes
