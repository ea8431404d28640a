"""aicr_lab.charts.oci: the registry's configuration (serving and pushing to a registry: tests/integration/lab/charts)."""

from aicr_lab.charts.oci import registry_config


def test_config_is_plain_http_on_loopback_with_filesystem_storage(tmp_path):
    config = registry_config(tmp_path, "127.0.0.1", 5123)
    assert config["http"]["addr"] == "127.0.0.1:5123"
    assert config["storage"]["filesystem"] == {"rootdirectory": str(tmp_path)}
    assert "auth" not in config and "tls" not in config["http"]
