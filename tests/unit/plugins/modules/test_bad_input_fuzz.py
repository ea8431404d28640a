"""Every module's argument spec driven with generated bad input: a one-line ``msg``, never a traceback.

Each example starts from arguments the spec accepts in shape (required options given a value of their type,
``kubeconfig`` a path that does not exist so nothing reaches a cluster, always check mode) and replaces one to
three options with something bad: wrong types, empty, unicode, huge, NUL bytes, path escapes, huge numbers.
The module either succeeds or fails with a one-line message; it never dies with a traceback or an
unstructured ``MODULE FAILURE``. The number of cases run is printed (``pytest -s``).
"""

import contextlib
import importlib
import io
import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible.module_utils.testing import patch_module_args

MODULES = ["cluster_facts", "crd_publish", "fabric_device", "gated_release", "recipe_resolve", "stack_info", "stack_status", "values_schema"]
CASES = {}
ENGINE = {}  # cases that got past AnsibleModule's own argument validation
# what AnsibleModule itself answers to arguments its spec refuses
ARGSPEC_MESSAGE = re.compile("(%s)" % "|".join([
    r"missing required arguments", r"missing parameter\(s\) required by", r"argument '", r"one of the following is required",
    r"parameters are mutually exclusive", r"Unsupported parameters", r"value of ", r"[Ee]lements value", r"parameters are required together",
    r".* is [^ ]+ but all of the following are missing"]))

BAD_VALUES = st.one_of(
    st.none(),
    st.just(""),
    st.just(" "),
    st.just("../../../../etc/passwd"),
    st.just("a/../../b"),
    st.just("nul\x00byte"),
    st.just("ünïcødé-名前-\u202e"),
    st.just("x" * 20000),
    st.just(0),
    st.just(-1),
    st.just(10 ** 30),
    st.just(1e300),
    st.just(float("nan")),
    st.just(True),
    st.just([]),
    st.just([None, {"a": []}]),
    st.just({}),
    st.just({"": None, "../x": {"y": [1]}}),
    st.text(max_size=40),
    st.integers(),
    st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.text(max_size=8), st.one_of(st.none(), st.text(max_size=8), st.integers()), max_size=3),
)


class _Spec(Exception):
    def __init__(self, spec):
        Exception.__init__(self, "argument spec")
        self.spec = spec


def argument_spec(module):
    """The spec the module hands to AnsibleModule (captured by a stand-in that stops there)."""

    def capture(*_args, **kwargs):
        raise _Spec(kwargs["argument_spec"])

    original = module.AnsibleModule
    module.AnsibleModule = capture
    try:
        with pytest.raises(_Spec) as caught:
            module.main()
    finally:
        module.AnsibleModule = original
    return caught.value.spec


def plausible(option):
    """A value of the option's type (what a user might pass without reading the docs)."""
    if option.get("choices"):
        return option["choices"][0]
    kind = option.get("type", "str")
    return {"bool": False, "int": 1, "float": 1.0, "list": [], "dict": {}, "raw": "x", "path": "/nonexistent/aicr-fuzz"}.get(kind, "x")


# What each module needs beyond its required options to get past AnsibleModule's own checks (required_one_of),
# so that most generated cases reach the engine. fabric_device keeps only its required options: its engine would
# talk to the endpoint.
ENGINE_BASE = {
    "gated_release": {"recipe": {"recipe_name": "fuzz", "components": [
        {"name": "a", "namespace": "fuzz", "chart": "a", "version": "1.0.0", "repository": "https://127.0.0.1:9/charts"}]}},
    "crd_publish": {"definition": {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.fuzz.io"}}},
}


def base_args(spec, name=None):
    args = dict(ENGINE_BASE.get(name) or {}, _ansible_check_mode=True)
    for name, option in spec.items():
        if option.get("required"):
            args[name] = plausible(option)
    if "kubeconfig" in spec:
        args["kubeconfig"] = "/nonexistent/aicr-fuzz/kubeconfig"
    return args


def run(module, args):
    out = io.StringIO()
    with patch_module_args(args):
        with contextlib.redirect_stdout(out):
            with pytest.raises(SystemExit) as exc:
                module.main()
    return exc.value.code, out.getvalue()


@pytest.mark.parametrize("name", MODULES)
def test_bad_input_fails_in_one_line(name, monkeypatch, tmp_path):
    module = importlib.import_module("ansible_collections.aicr.runtime.plugins.modules.%s" % name)
    spec = argument_spec(module)
    # nothing from the developer's environment: no cluster, no AWX credentials, no helm of another cluster
    for variable in ("KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_API_KEY", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    names = sorted(spec)

    @settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.dictionaries(st.sampled_from(names), BAD_VALUES, min_size=1, max_size=3))
    def case(bad):
        # ansible-core's own argument validation raises TypeError (in set_fallbacks) for a scalar given to an option
        # with sub-options, before any module code runs: ansible/ansible#81631 (community.docker#680), not ours to catch.
        assume(not any(spec[key].get("options") and value is not None and not isinstance(value, (dict, str)) for key, value in bad.items()))
        args = dict(base_args(spec, name), **bad)
        code, out = run(module, args)
        CASES[name] = CASES.get(name, 0) + 1
        assert "Traceback" not in out, (args, out[-2000:])
        result = json.loads(out)
        if not code or not ARGSPEC_MESSAGE.match(result.get("msg") or ""):
            ENGINE[name] = ENGINE.get(name, 0) + 1
        if code:
            msg = result.get("msg")
            assert isinstance(msg, str) and msg, (args, result)
            assert "\n" not in msg.strip(), ("a one-line msg", args, msg[:2000])
            assert "MODULE FAILURE" not in msg and "Traceback" not in msg, (args, msg[:2000])

    case()
    print("%s: %d bad-input cases, %d past the argument spec" % (name, CASES[name], ENGINE.get(name, 0)))
    assert CASES[name] >= 100
