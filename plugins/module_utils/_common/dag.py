# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Dependency cycles, found once for the recipe's ``dependencyRefs`` and the rollout's gates."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def find_cycle(order, deps):
    """The first cycle a depth-first search finds (nodes in ``order``, children in ``deps`` order), as a closed path
    ``[a, b, ..., a]``; None when there is none. Dependencies that are not nodes are followed as leaves."""
    state = {}
    for root in order:
        if root in state:
            continue
        path = [root]
        state[root] = 1
        stack = [iter(deps.get(root, ()))]
        while stack:
            advanced = False
            for child in stack[-1]:
                if state.get(child) == 1:
                    return path[path.index(child):] + [child]
                if child not in state:
                    state[child] = 1
                    path.append(child)
                    stack.append(iter(deps.get(child, ())))
                    advanced = True
                    break
            if not advanced:
                state[path.pop()] = 2
                stack.pop()
    return None
