"""Stack names and every name derived from one (issue #35, item 3): a stack name is a DNS-1123 label or is refused in
one line before the cluster is contacted, and the label value, Lease, inventory, fabric Lease, device records and stack
ConfigMap derived from it are injective - a derived name cut to fit its limit ends in a hash of the whole stack name.

On the base commit ``gpu prod``, ``gpu/prod`` and ``gpu:prod`` were one owner (``label_value`` folded them to
``gpu-prod``), ``GPU`` and ``gpu`` one Lease and one inventory, and long names cut at 63 characters shared them.
"""

import itertools
import re

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import constants
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import check_stack_name, fit_name, label_value, stack_name_problem
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.exclusive import fabric_lease_name
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import records_name
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import lease_name
from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine as stack_engine
from ansible_collections.aicr.runtime.plugins.module_utils._stack.store import configmap_name

DNS_LABEL_RULE = "allowed: a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"

OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# the reproduced collisions of the issue, and the folds slug() made (case, '.', '_')
FOLDED = ["gpu prod", "gpu/prod", "gpu:prod", "GPU-prod", "gpu.prod", "gpu_prod", "probe f", "probe/f"]
INVALID = FOLDED + ["", "-gpu", "gpu-", "a" * 64, "gpu\nprod", u"gp\u00fc", "a,owner!=helm"]
VALID = ["gpu", "a", "0", "gpu-prod", "gpu--prod", "9lives", "a" * 63]


def derived(stack):
    """Every name the collection derives from a stack."""
    return {"label": label_value(stack), "lease": lease_name(stack), "fabric_lease": fabric_lease_name(stack),
            "inventory": Inventory(None, stack, "aicr-system").name, "records": records_name(stack), "configmap": configmap_name(stack)}


@pytest.mark.parametrize("value", INVALID)
def test_an_invalid_stack_name_is_refused_in_one_line(value):
    assert stack_name_problem(value) is not None
    with pytest.raises(AicrError) as caught:
        check_stack_name("stack", value)
    msg = caught.value.msg
    assert "\n" not in msg and msg.startswith("stack: %r " % value) and msg.endswith(DNS_LABEL_RULE), msg
    assert caught.value.details == {"field": "stack", "value": value}


@pytest.mark.parametrize("value", VALID)
def test_a_dns_label_is_a_stack_name_and_its_own_label_value(value):
    assert stack_name_problem(value) is None and check_stack_name("stack", value) == value
    assert label_value(value) == value, "a valid stack name needs no folding, so its label value is injective"


def test_not_a_string_is_refused():
    with pytest.raises(AicrError, match=r"^names\[0\]: 5 is a int, not a string; allowed: a DNS-1123 label"):
        check_stack_name("names[0]", 5)


def test_label_values_of_distinct_texts_no_longer_collide():
    # the base commit folded all of these to "gpu-prod": one owner for prune and state: absent
    values = [label_value(text) for text in FOLDED[:3]]
    assert len(set(values)) == 3 and all(v.startswith("gpu-prod-") for v in values), values
    long_a, long_b = "x" * 70 + "a", "x" * 70 + "b"
    assert label_value(long_a) != label_value(long_b) and len(label_value(long_a)) <= 63


def test_derived_names_are_injective_over_long_valid_names():
    # names that agree on their first 62 characters, and lengths around every cut point of every derived name
    stacks = set(["a" * 62 + c for c in "bcd"] + ["a" * 63])
    for length in range(30, 64):
        stacks.update(("s%d" % i).ljust(length, "x")[:length - 1] + "z" for i in range(3))
    stacks = sorted(s for s in stacks if stack_name_problem(s) is None)
    names = dict((stack, derived(stack)) for stack in stacks)
    for kind in ("label", "lease", "fabric_lease", "inventory", "records", "configmap"):
        seen = {}
        for stack in stacks:
            name = names[stack][kind]
            assert name not in seen, "%s: %s and %s share %s" % (kind, seen.get(name), stack, name)
            seen[name] = stack
            assert len(name) <= (63 if kind in ("label", "lease", "fabric_lease", "inventory") else 253), (kind, name)
            assert OBJECT_NAME.match(name), "%s %s: a valid object name (DNS-1123)" % (kind, name)


def test_a_cut_name_ends_in_the_hash_of_the_whole_stack_name_and_fills_the_limit():
    stack = "a" * 40 + "-" + "b" * 22  # 63: every prefixed name of it is cut
    lease = lease_name(stack)
    inventory = Inventory(None, stack, "ns").name
    digest = constants.name_hash(stack)
    assert len(lease) == 63 and lease.startswith("aicr-runtime-aaaa") and lease.endswith("-" + digest)
    assert len(inventory) == 63 and inventory.endswith("-%s-inventory" % digest)
    assert lease_name("gpu") == "aicr-runtime-gpu" and Inventory(None, "gpu", "ns").name == "aicr-runtime-gpu-inventory"
    assert fabric_lease_name("gpu") == "aicr-fabric-gpu" and records_name("gpu") == "aicr-devices-gpu"


def test_a_chosen_short_name_never_equals_a_cut_one():
    """The attack on a plain cut-and-hash: name a second stack exactly like the first one's cut name. Uncut names are
    always shorter than the limit, cut ones exactly as long, so the two never meet."""
    victim = "v" * 60
    cut = fit_name("aicr-runtime-", victim, limit=63)
    forged = cut[len("aicr-runtime-"):]
    assert stack_name_problem(forged) is None, "a valid stack name"
    assert lease_name(forged) != lease_name(victim)
    for text, prefix, suffix in itertools.product(["q" * n for n in range(35, 64)], ["aicr-runtime-", "p-"], ["", "-inventory"]):
        name = fit_name(prefix, text, suffix, limit=63)
        assert len(name) < 63 if len(prefix + text + suffix) < 63 else len(name) == 63


@pytest.mark.parametrize("params,field", [
    ({"name": "gpu prod"}, "name"),
    ({"name": "Gpu"}, "name"),
])
def test_stack_status_refuses_a_bad_name_before_contacting_the_cluster(monkeypatch, params, field):
    monkeypatch.setattr(stack_engine, "_client", lambda _p: pytest.fail("the cluster was contacted"))
    with pytest.raises(AicrError, match=r"^%s: %r is not a DNS-1123 label; allowed: " % (field, params[field])):
        stack_engine.update_status(dict(params, backend="configmap"))


def test_stack_info_refuses_a_bad_name_before_contacting_the_cluster(monkeypatch):
    monkeypatch.setattr(stack_engine, "_client", lambda _p: pytest.fail("the cluster was contacted"))
    with pytest.raises(AicrError, match=r"^names\[1\]: 'gpu/prod' is not a DNS-1123 label; allowed: "):
        stack_engine.info({"names": ["gpu", "gpu/prod"], "backend": "configmap"})


def test_gated_release_refuses_a_bad_stack_before_anything_else():
    from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
    from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import options_from

    for params, field in (({"stack": "probe/f"}, "stack"), ({"stack": "ok", "status_stack": "probe f"}, "status_stack")):
        with pytest.raises(AicrError, match=r"^%s: %r is not a DNS-1123 label" % (field, params[field])):
            execute(dict(params, recipe={"components": []}), cluster=object(), helm=object())
    # a stack named after the recipe obeys the same rule
    with pytest.raises(AicrError, match=r"^stack: 'H100.training' is not a DNS-1123 label"):
        options_from({}, {"recipe_name": "H100.training"}, False, False)
    assert options_from({}, {"recipe_name": "h100-eks-training"}, False, False).stack == "h100-eks-training"


def test_fabric_device_refuses_a_bad_stack_before_anything_else(monkeypatch):
    from ansible_collections.aicr.runtime.plugins.module_utils._entry import fabric_device as fabric_run

    monkeypatch.setattr(fabric_run, "_client", lambda _p: pytest.fail("the cluster was contacted"))
    monkeypatch.setattr(fabric_run, "build_backend", lambda *a, **k: pytest.fail("the fabric was contacted"))
    for params, field in (({"stack": "gpu prod", "status_stack": None}, "stack"), ({"stack": None, "status_stack": "GPU"}, "status_stack")):
        with pytest.raises(AicrError, match=r"^%s: %r is not a DNS-1123 label" % (field, params[field])):
            fabric_run.run(params)


def test_absent_of_stack_probe_slash_f_leaves_the_release_of_stack_probe_f_alone(fakes):
    """The reproduced bug: ``state: absent`` of stack ``probe/f`` uninstalled the release of stack ``probe f`` (both were
    ``aicr.io/stack=probe-f``). Now ``probe/f`` is refused before anything is read, and the release stays."""
    from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
    from release_helpers import comp, make_charts  # pylint: disable=import-error

    cluster = fakes.FakeCluster()
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})  # the default lease_namespace
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    base = {"recipe": {"recipe_name": "probe", "components": [comp("x")]}, "poll_interval": 0.01, "timeout": 10, "render_cache": False}
    installed = execute(dict(base, stack="probe-f"), cluster=cluster, helm=helm)
    assert "failed_message" not in installed, installed.get("failed_message")
    releases = cluster.list("v1", "Secret", label_selector="owner=helm,aicr.io/stack=probe-f")
    assert len(releases) == 1
    mutations = len(cluster.mutations())
    with pytest.raises(AicrError, match=r"^stack: 'probe/f' is not a DNS-1123 label; allowed: "):
        execute(dict(base, stack="probe/f", state="absent"), cluster=cluster, helm=helm)
    assert [c for c in helm.calls if c[0] == "uninstall"] == [] and len(cluster.mutations()) == mutations
    assert cluster.list("v1", "Secret", label_selector="owner=helm,aicr.io/stack=probe-f") == releases


def test_a_huge_value_is_shown_cut_in_the_message():
    with pytest.raises(AicrError, match=r"^stack: 'xxxxxxxxx+\.\.\. \(20000 characters\) is 20000 characters long; allowed: a DNS-1123") as caught:
        check_stack_name("stack", "x" * 20000)
    assert len(caught.value.msg) < 300 and caught.value.details["value"] == "x" * 20000
