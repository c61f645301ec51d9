"""The manifest JSON Schema: published, used by the loader, valid for jsonschema (the reference)."""

from __future__ import annotations

import json

from conftest import REPO, run_cli

from pp1audit.manifest.schema import SCHEMA


def test_schema_command_prints_the_schema_and_manifests_validate() -> None:
    import jsonschema
    import yaml

    proc = run_cli("schema")
    assert proc.returncode == 0
    printed = json.loads(proc.stdout)
    assert printed == json.loads(json.dumps(SCHEMA))
    jsonschema.Draft7Validator.check_schema(printed)
    manifests = sorted((REPO / "manifests").rglob("*.yaml"))
    assert manifests
    for path in manifests:
        data = yaml.safe_load(path.read_text())
        if "date" in data.get("audit", {}):
            data["audit"]["date"] = str(data["audit"]["date"])  # YAML reads it as a date
        jsonschema.Draft7Validator(printed).validate(data)
