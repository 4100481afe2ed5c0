"""Trim kubernetes-validate's v1.33.0-local-strict schemas to what pado's manifests use.

Usage: python3 trim.py DIR > k8s-v1.33-strict.json, where DIR is
kubernetes_validate/kubernetes-json-schema/v1.33.0-local-strict from the
kubernetes-validate 1.37.0 wheel (PyPI). Keeps the Job, ConfigMap and Secret schemas and every
definition they reach, with references made local (#/$defs/...).
"""
import json
import sys

d = sys.argv[1]
defs = json.load(open(f"{d}/_definitions.json"))["$defs"]
roots = {"Job": "job-batch-v1.json", "ConfigMap": "configmap-v1.json", "Secret": "secret-v1.json"}
PREFIX = "/api/_definitions.json#/$defs/"


def local(node, found):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith((PREFIX, "#/$defs/")):
                name = v.split("#/$defs/", 1)[1]
                found.add(name)
                out[k] = "#/$defs/" + name
            elif k in ("description", "$id", "$schema"):
                continue
            else:
                out[k] = local(v, found)
        return out
    if isinstance(node, list):
        return [local(x, found) for x in node]
    return node


out = {}
todo = set()
for kind, file in roots.items():
    out["pado.root." + kind] = local(json.load(open(f"{d}/{file}")), todo)
while todo:
    name = todo.pop()
    if name in out:
        continue
    out[name] = local(defs[name], todo)
print(json.dumps({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$comment": "Kubernetes v1.33.0 JSON schemas (strict: additionalProperties false), "
                "from the kubernetes-validate 1.37.0 wheel (Apache-2.0), generated from "
                "kubernetes/kubernetes api/openapi-spec by openapi2jsonschema; trimmed by trim.py "
                "to the Job, ConfigMap and Secret schemas and the definitions they reach.",
    "$defs": dict(sorted(out.items())),
}, indent=1, sort_keys=False))
