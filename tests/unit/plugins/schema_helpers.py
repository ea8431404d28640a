"""Helpers shared by the values_schema engine tests."""

import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine, infer, jsonschema


def corpus_charts(shared_dir):
    """Every corpus chart directory (30 charts)."""
    return sorted(p for p in (shared_dir / "values-corpus").iterdir() if (p / "values.yaml").is_file())


def chart_name(chart_dir):
    return yaml.safe_load((chart_dir / "Chart.yaml").read_text())["name"]


def schema_of(text, draft="2020-12"):
    return jsonschema.to_json_schema(infer.infer_text(text), draft)


def node_at(schema, dotted):
    """Walk JSON Schema properties / items: 'a.b[].c'."""
    node = schema
    for part in dotted.split("."):
        if part.endswith("[]"):
            node = node["properties"][part[:-2]]["items"]
        else:
            node = node["properties"][part]
    return node


def run_engine(params, check_mode=False):
    """``(result, failed_message or None)`` of the values_schema engine (its one result carries ``failed_message``)."""
    result = engine.run(params, check_mode=check_mode)
    return result, result.pop("failed_message", None)
