"""Property tests (hypothesis): deployment order and merge rules."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import merge
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import order
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, merge_null_deletes, merge_null_kept

NAMES = ["c%02d" % i for i in range(12)]


@st.composite
def dags(draw):
    """Random DAGs: each component may depend on components earlier in a random permutation; some disabled."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=12, unique=True))
    perm = draw(st.permutations(names))
    refs = []
    for index, name in enumerate(perm):
        deps = draw(st.lists(st.sampled_from(perm[:index]), unique=True, max_size=4)) if index else []
        ref = {"name": name, "dependencyRefs": deps}
        if draw(st.integers(0, 5)) == 0:
            ref["overrides"] = {"enabled": False}
        refs.append(ref)
    return refs


@given(dags())
@settings(max_examples=200, deadline=None)
def test_order_is_topological_and_complete(refs):
    result = order.deployment_order(refs)
    enabled = [r["name"] for r in refs if order.is_enabled(r)]
    assert sorted(result) == sorted(enabled)
    position = dict((name, i) for i, name in enumerate(result))
    for ref in refs:
        if ref["name"] not in position:
            continue
        for dep in ref["dependencyRefs"]:
            if dep in position:
                assert position[dep] < position[ref["name"]]


@given(dags(), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_order_is_deterministic(refs, rnd):
    shuffled = list(refs)
    rnd.shuffle(shuffled)
    assert order.deployment_order(shuffled) == order.deployment_order(refs)


@given(dags())
@settings(max_examples=200, deadline=None)
def test_order_picks_alphabetically_first_ready(refs):
    result = order.deployment_order(refs)
    by_name = dict((r["name"], r) for r in refs)
    enabled = set(result)
    placed = set()
    for name in result:
        ready = [n for n in enabled - placed
                 if all(d in placed or d not in enabled for d in by_name[n]["dependencyRefs"])]
        assert name == min(ready)
        placed.add(name)


@given(dags())
@settings(max_examples=100, deadline=None)
def test_back_edge_is_reported_as_a_cycle(refs):
    if len(refs) < 2 or not refs[-1]["dependencyRefs"]:
        return
    last = refs[-1]
    target = dict((r["name"], r) for r in refs)[last["dependencyRefs"][0]]
    target["dependencyRefs"] = list(target["dependencyRefs"]) + [last["name"]]
    try:
        order.validate_dependencies(refs)
    except AicrError as exc:
        cycle = exc.details["cycle"]
        assert cycle[0] == cycle[-1] and len(cycle) >= 3
        names = dict((r["name"], r) for r in refs)
        for a, b in zip(cycle, cycle[1:]):
            assert b in names[a]["dependencyRefs"]
    else:
        raise AssertionError("cycle not detected")


json_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=3))
keys = st.sampled_from(["a", "b", "c", "d"])
values_tree = st.recursive(json_scalars, lambda children: st.dictionaries(keys, children, max_size=3), max_leaves=10)
maps = st.dictionaries(keys, values_tree, max_size=4)
maps_with_nulls = st.dictionaries(keys, st.one_of(st.none(), values_tree,
                                                  st.dictionaries(keys, st.one_of(st.none(), values_tree), max_size=3)), max_size=4)


def _paths(tree, prefix=()):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _paths(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def _get(tree, path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return KeyError
        tree = tree[key]
    return tree


@given(maps, maps_with_nulls)
@settings(max_examples=300, deadline=None)
def test_merge_values_src_wins_and_null_deletes(dst, src):
    original_src = deep_copy(src)
    out = merge_null_deletes(deep_copy(dst), src)
    assert src == original_src, "the source must not be mutated"
    for path, value in _paths(src):
        if value is None:
            if len(path) == 1 or isinstance(_get(dst, path[:-1]), dict):
                assert _get(out, path) is KeyError
        elif value != {}:
            assert _get(out, path) == value


@given(maps)
@settings(max_examples=200, deadline=None)
def test_merge_values_idempotent(tree):
    assert merge_null_deletes(deep_copy(tree), tree) == tree


@given(maps, maps)
@settings(max_examples=200, deadline=None)
def test_deep_merge_keeps_untouched_keys_and_is_idempotent(dst, src):
    once = merge_null_kept(deep_copy(dst), src)
    twice = merge_null_kept(deep_copy(once), src)
    assert once == twice
    for key in dst:
        if key not in src:
            assert once[key] == dst[key]


lists = st.lists(st.sampled_from(["x", "y", "z", "w"]), max_size=5)


@given(lists, lists, lists)
@settings(max_examples=200, deadline=None)
def test_merge_ref_appends_without_duplicates(base_deps, over_deps, files):
    base = merge.clean_ref({"name": "n", "dependencyRefs": list(dict.fromkeys(base_deps)), "manifestFiles": files})
    out = merge.merge_ref(base, merge.clean_ref({"name": "n", "dependencyRefs": over_deps, "manifestFiles": list(reversed(files))}))
    deps = out.get("dependencyRefs", [])
    assert len(deps) == len(set(deps))
    assert deps[:len(base.get("dependencyRefs", []))] == base.get("dependencyRefs", [])
    assert set(deps) == set(base_deps) | set(over_deps)
    assert out.get("manifestFiles", [])[:len(files)] == files[:len(out.get("manifestFiles", []))]


@given(st.text(alphabet="abc", max_size=2), st.text(alphabet="abc", max_size=2), st.booleans(), st.booleans())
def test_merge_ref_scalars_later_non_empty_wins(v1, v2, c1, c2):
    out = merge.merge_ref(merge.clean_ref({"name": "n", "version": v1, "cleanup": c1}), merge.clean_ref({"name": "n", "version": v2, "cleanup": c2}))
    assert out.get("version", "") == (v2 or v1)
    assert bool(out.get("cleanup")) == (c1 or c2)


# -- resolution on the real catalog ------------------------------------------------------------

import copy  # noqa: E402  (kept next to the tests that use it)

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit  # noqa: E402
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import match  # noqa: E402
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod  # noqa: E402


def _stated_leaves(cat):
    return [n for n in cat.leaves() if any(crit.is_stated(cat.overlays[n]["spec"]["criteria"].get(d)) for d in crit.DIMENSIONS)]


def _outcome(cat, query):
    try:
        return resolve_mod.build_recipe(cat, query)
    except AicrError as exc:
        return ("error", exc.msg)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_resolution_ignores_overlay_file_order(aicr_catalog, data):
    leaf = data.draw(st.sampled_from(_stated_leaves(aicr_catalog)))
    oc = aicr_catalog.overlays[leaf]["spec"]["criteria"]
    dims = data.draw(st.lists(st.sampled_from([d for d in crit.DIMENSIONS if crit.is_stated(oc.get(d))]), unique=True, min_size=1))
    query = crit.parse_criteria(dict((d, oc[d]) for d in dims), aicr_catalog.registered)
    shuffled = copy.copy(aicr_catalog)
    names = list(aicr_catalog.overlays)
    data.draw(st.randoms(use_true_random=False)).shuffle(names)
    shuffled.overlays = dict((n, aicr_catalog.overlays[n]) for n in names)
    assert _outcome(shuffled, query) == _outcome(aicr_catalog, query)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_matches_are_leaves_in_specificity_order(aicr_catalog, data):
    leaf = data.draw(st.sampled_from(_stated_leaves(aicr_catalog)))
    oc = aicr_catalog.overlays[leaf]["spec"]["criteria"]
    dims = data.draw(st.lists(st.sampled_from([d for d in crit.DIMENSIONS if crit.is_stated(oc.get(d))]), unique=True))
    query = crit.parse_criteria(dict((d, oc[d]) for d in dims), aicr_catalog.registered)
    shuffled = copy.copy(aicr_catalog)
    order = list(aicr_catalog.overlays)
    data.draw(st.randoms(use_true_random=False)).shuffle(order)
    shuffled.overlays = dict((n, aicr_catalog.overlays[n]) for n in order)
    matched = match.find_matching(shuffled, query)
    names = [d["metadata"]["name"] for d in matched]
    keys = [(crit.specificity(d["spec"]["criteria"]), d["metadata"]["name"]) for d in matched]
    assert keys == sorted(keys)
    for doc in matched:
        ancestors = [d["metadata"]["name"] for d in aicr_catalog.chain(doc["metadata"]["name"])[:-1]]
        assert not set(ancestors) & set(names)
        assert crit.matches(doc["spec"]["criteria"], query)
    if len(dims) == len([d for d in crit.DIMENSIONS if crit.is_stated(oc.get(d))]):
        assert leaf in names, "a leaf's full criteria must select the leaf"
