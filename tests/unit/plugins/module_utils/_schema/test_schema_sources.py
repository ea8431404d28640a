"""Chart sources: directories with subcharts, packaged charts, helm pull from a local http repository."""

import os
import tarfile

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import jsonschema, sources

NVIDIA_REPO = "helm.ngc.nvidia.com_nvidia"


def _write_chart(root, name, values, deps=None):
    root.mkdir(parents=True, exist_ok=True)
    chart_yaml = "apiVersion: v2\nname: %s\nversion: 1.2.3\n" % name
    if deps:
        chart_yaml += "dependencies:\n" + "".join("- name: %s\n  version: 0.1.0\n%s" % (d, "  alias: %s\n" % a if a else "") for d, a in deps)
    (root / "Chart.yaml").write_text(chart_yaml)
    (root / "values.yaml").write_text(values)
    return root


@pytest.fixture
def umbrella(tmp_path):
    top = _write_chart(tmp_path / "umbrella", "umbrella", "global:\n  registry: r\nreplicas: 1\nsub:\n  enabled: true\n",
                       deps=[("sub", None), ("packed", "pk")])
    _write_chart(top / "charts" / "sub", "sub", "global:\n  pullSecrets: []\nenabled: false\nport: 80\n")
    packed = _write_chart(tmp_path / "build" / "packed", "packed", "# Packed level.\nlevel: 3\n")
    with tarfile.open(str(top / "charts" / "packed-0.1.0.tgz"), "w:gz") as archive:
        archive.add(str(packed), arcname="packed")
    return top


def test_chart_dir_with_subcharts_and_aliases(umbrella):
    chart = sources.load_chart(str(umbrella))
    assert (chart.name, chart.version) == ("umbrella", "1.2.3")
    assert [key for key, _sub in chart.subcharts] == ["pk", "sub"]
    schema = jsonschema.to_json_schema(chart.node())
    assert set(schema["properties"]) == {"global", "replicas", "sub", "pk"}
    assert set(schema["properties"]["global"]["properties"]) == {"registry", "pullSecrets"}
    assert set(schema["properties"]["sub"]["properties"]) == {"enabled", "port"}
    assert schema["properties"]["pk"]["properties"]["level"] == {"description": "Packed level.", "type": "integer"}
    values = chart.values()
    assert values["sub"] == {"enabled": True, "port": 80}
    assert values["global"] == {"pullSecrets": [], "registry": "r"}
    assert values["pk"] == {"level": 3}
    assert validation.validate(schema, values) == []


def test_packaged_chart(umbrella, tmp_path):
    archive = tmp_path / "umbrella-1.2.3.tgz"
    with tarfile.open(str(archive), "w:gz") as handle:
        handle.add(str(umbrella), arcname="umbrella")
    chart = sources.load_chart(str(archive))
    assert [key for key, _sub in chart.subcharts] == ["sub", "pk"] or [key for key, _sub in chart.subcharts] == ["pk", "sub"]
    assert set(jsonschema.to_json_schema(chart.node())["properties"]) == {"global", "replicas", "sub", "pk"}


def test_real_packaged_chart_with_subchart(shared_dir):
    archive = shared_dir / "charts-repo" / "http" / NVIDIA_REPO / "network-operator-26.4.1.tgz"
    chart = sources.load_chart(str(archive))
    assert chart.name == "network-operator"
    assert sorted(key for key, _sub in chart.subcharts) == ["maintenance-operator-chart", "node-feature-discovery", "sriov-network-operator"]
    schema = jsonschema.to_json_schema(chart.node())
    assert validation.validate(schema, chart.values()) == []


def test_bad_sources(tmp_path):
    with pytest.raises(AicrError) as exc:
        sources.load_chart(str(tmp_path / "nope"))
    assert exc.value.msg.startswith("chart: %s does not exist; allowed: " % (tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AicrError) as exc:
        sources.load_chart(str(tmp_path / "empty"))
    assert "has no Chart.yaml" in exc.value.msg
    (tmp_path / "bad.tgz").write_bytes(b"not a tarball")
    with pytest.raises(AicrError) as exc:
        sources.load_chart(str(tmp_path / "bad.tgz"))
    assert "is not a readable chart archive" in exc.value.msg


def test_missing_helm_binary(tmp_path):
    with pytest.raises(AicrError) as exc:
        sources.load_chart("oci://127.0.0.1:1/charts/x", version="1.0.0", helm_binary=str(tmp_path / "no-helm"))
    assert exc.value.msg.startswith("helm_binary: cannot run %s (" % (tmp_path / "no-helm"))


def test_discover_versions_oci_refused():
    with pytest.raises(AicrError) as exc:
        sources.discover_versions("oci://127.0.0.1:5000/charts", "x")
    assert "oci registries list no versions" in exc.value.msg


def test_file_repository_index(tmp_path):
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries:\n  a:\n  - version: 2.0.0\n  - version: 1.0.0\n")
    assert sources.discover_versions("file://%s" % tmp_path, "a") == ["2.0.0", "1.0.0"]
    assert os.path.isfile(str(tmp_path / "index.yaml"))


FAKE_HELM = """#!/bin/sh
# records its argv, then writes the chart archive given in $FAKE_CHART to the --destination directory
printf '%s\\n' "$@" > "$FAKE_ARGV"
dest=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--destination" ]; then dest="$2"; fi
  shift
done
cp "$FAKE_CHART" "$dest/"
"""


@pytest.fixture
def fake_helm(tmp_path, umbrella, monkeypatch):
    archive = tmp_path / "umbrella-1.2.3.tgz"
    with tarfile.open(str(archive), "w:gz") as handle:
        handle.add(str(umbrella), arcname="umbrella")
    script = tmp_path / "fake-helm"
    script.write_text(FAKE_HELM)
    script.chmod(0o755)
    monkeypatch.setenv("FAKE_CHART", str(archive))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv"))
    return script


def test_pull_argv_for_oci_and_repository(fake_helm, tmp_path):
    chart = sources.load_chart("oci://127.0.0.1:5000/charts/umbrella", version="1.2.3", helm_binary=str(fake_helm))
    assert chart.name == "umbrella" and chart.origin == "oci://127.0.0.1:5000/charts/umbrella"
    argv = (tmp_path / "argv").read_text().split("\n")[:-1]
    assert argv[:2] == ["pull", "oci://127.0.0.1:5000/charts/umbrella"] and argv[argv.index("--version") + 1] == "1.2.3"
    assert "--repo" not in argv
    sources.load_chart("umbrella", repository="http://127.0.0.1:8879/charts", helm_binary=str(fake_helm))
    argv = (tmp_path / "argv").read_text().split("\n")[:-1]
    assert argv[argv.index("--repo") + 1] == "http://127.0.0.1:8879/charts" and "--version" not in argv
    sources.pull("oci://127.0.0.1:5000/charts/umbrella", helm_binary=str(fake_helm), insecure=True)
    assert "--plain-http" in (tmp_path / "argv").read_text().split("\n")


def test_index_auth_takes_the_repository_entry_by_the_pull_rule(tmp_path):
    """discover_versions reads index.yaml with the entry helm's pull would use: exact or /-bounded prefix, longest wins."""
    from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos

    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    creds = repos.normalize_credentials([
        {"url": "https://charts.example/private", "username": "u", "password": "p", "ca_file": str(ca)},
        {"url": "https://charts.example", "insecure_skip_tls_verify": True},
    ])
    assert sources._index_auth("https://charts.example/private/", creds) == {  # pylint: disable=protected-access
        "validate_certs": True, "url_username": "u", "url_password": "p", "force_basic_auth": True, "ca_path": str(ca)}
    assert sources._index_auth("https://charts.example/public", creds) == {"validate_certs": False}  # pylint: disable=protected-access
    assert sources._index_auth("https://charts.example.org", creds) == {}  # pylint: disable=protected-access


def test_pull_runs_helm_with_a_private_home_and_no_inherited_helm_settings(fake_helm, tmp_path, monkeypatch):
    monkeypatch.setenv("HELM_REPOSITORY_CONFIG", str(tmp_path / "someone-elses-repositories.yaml"))
    monkeypatch.setenv("FAKE_ENV", str(tmp_path / "env"))
    script = fake_helm.read_text().replace('printf', 'env > "$FAKE_ENV"\nprintf', 1)
    fake_helm.write_text(script)
    sources.load_chart("oci://127.0.0.1:5000/charts/umbrella", version="1.2.3", helm_binary=str(fake_helm))
    env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line)
    assert "HELM_REPOSITORY_CONFIG" not in env
    home = env["HELM_CACHE_HOME"].rsplit("/", 2)[0]
    assert os.path.basename(home).startswith("aicr-pull-") and not os.path.exists(home), "the private home was not removed"
