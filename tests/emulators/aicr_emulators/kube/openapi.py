"""OpenAPI answers: a minimal v2 document (protobuf or JSON) and v3 per group-version documents.

The v3 documents list every resource path with its operations; PATCH operations declare the
``fieldValidation`` query parameter, which is what kubectl and helm look for before relying on
server-side field validation. Component schemas are given for custom resources (from their CRD);
built-in kinds carry none, so kubectl falls back to its compiled-in types for strategic merge.
"""

import hashlib
import json

from .protobuf import _enc_field  # pylint: disable=protected-access


def v2_protobuf(kube_version):
    """gnostic openapi_v2.Document {swagger: "2.0", info: {title, version}, paths: {}, definitions: {}}."""
    info = _enc_field(1, 2, b"Kubernetes") + _enc_field(2, 2, kube_version.encode())
    return _enc_field(1, 2, b"2.0") + _enc_field(2, 2, info) + _enc_field(8, 2, b"") + _enc_field(9, 2, b"")


def v2_json(kube_version):
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": kube_version}, "paths": {}, "definitions": {}}


def _gv_path(group, version):
    return "api/%s" % version if not group else "apis/%s/%s" % (group, version)


def v3_index(registry):
    paths = {}
    gvs = [("", "v1")] + [(g, v) for g, versions in registry.groups() for v in versions]
    for group, version in gvs:
        types = registry.types_in(group, version)
        digest = hashlib.sha256(json.dumps(sorted((t.plural, t.kind, registry.generation if t.crd else 0) for t in types))
                                .encode()).hexdigest()[:32].upper()
        rel = _gv_path(group, version)
        paths[rel] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (rel, digest)}
    return {"paths": paths}


def _param(name, description, typ="string"):
    return {"name": name, "in": "query", "description": description, "schema": {"type": typ, "uniqueItems": True}}


_PATCH_PARAMS = [
    _param("dryRun", "When present, indicates that modifications should not be persisted."),
    _param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
    _param("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request containing "
           "unknown or duplicate fields. Valid values are: Ignore, Warn, Strict."),
    _param("force", "Force is going to \"force\" Apply requests.", "boolean"),
]
_WRITE_PARAMS = _PATCH_PARAMS[:3]


def _ref(name):
    return {"$ref": "#/components/schemas/%s" % name}


def _schema_name(rtype, version):
    group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return "%s.%s.%s" % (group, version, rtype.kind)


def v3_document(registry, group, version, kube_version):
    types = registry.types_in(group, version)
    if not types:
        return None
    paths = {}
    schemas = {}
    prefix = "/" + _gv_path(group, version)
    for rtype in types:
        gvk = {"group": group, "version": version, "kind": rtype.kind}
        name = _schema_name(rtype, version)
        body_schema = {"type": "object"}
        if rtype.crd is not None:
            node = rtype.schema_for(version)
            if node:
                schemas[name] = dict(node, **{"x-kubernetes-group-version-kind": [gvk]})
                body_schema = _ref(name)
        content = {"application/json": {"schema": body_schema}}
        ok = {"200": {"description": "OK", "content": content}}
        patch_body = {"content": {ct: {"schema": {"type": "object"}} for ct in (
            "application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")},
            "required": True}
        if rtype.verbs == ["create"]:
            paths["%s/%s" % (prefix, rtype.plural)] = {"post": {
                "operationId": "create" + rtype.kind, "parameters": _WRITE_PARAMS, "requestBody": {"content": content},
                "responses": {"201": ok["200"]}, "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk}}
            continue
        base = prefix + ("/namespaces/{namespace}" if rtype.namespaced else "") + "/" + rtype.plural
        paths[base] = {
            "get": {"operationId": "list" + rtype.kind, "responses": ok, "x-kubernetes-action": "list",
                    "x-kubernetes-group-version-kind": gvk},
            "post": {"operationId": "create" + rtype.kind, "parameters": _WRITE_PARAMS, "requestBody": {"content": content},
                     "responses": {"201": ok["200"]}, "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk},
            "delete": {"operationId": "deletecollection" + rtype.kind, "responses": ok,
                       "x-kubernetes-action": "deletecollection", "x-kubernetes-group-version-kind": gvk},
        }
        item = base + "/{name}"
        paths[item] = {
            "get": {"operationId": "read" + rtype.kind, "responses": ok, "x-kubernetes-action": "get",
                    "x-kubernetes-group-version-kind": gvk},
            "put": {"operationId": "replace" + rtype.kind, "parameters": _WRITE_PARAMS, "requestBody": {"content": content},
                    "responses": ok, "x-kubernetes-action": "put", "x-kubernetes-group-version-kind": gvk},
            "patch": {"operationId": "patch" + rtype.kind, "parameters": _PATCH_PARAMS, "requestBody": patch_body,
                      "responses": ok, "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk},
            "delete": {"operationId": "delete" + rtype.kind, "responses": ok, "x-kubernetes-action": "delete",
                       "x-kubernetes-group-version-kind": gvk},
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
            + ([{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}] if rtype.namespaced else []),
        }
        if rtype.status:
            paths[item + "/status"] = {
                "get": {"operationId": "read%sStatus" % rtype.kind, "responses": ok, "x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": gvk},
                "put": {"operationId": "replace%sStatus" % rtype.kind, "parameters": _WRITE_PARAMS,
                        "requestBody": {"content": content}, "responses": ok, "x-kubernetes-action": "put",
                        "x-kubernetes-group-version-kind": gvk},
                "patch": {"operationId": "patch%sStatus" % rtype.kind, "parameters": _PATCH_PARAMS, "requestBody": patch_body,
                          "responses": ok, "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk},
            }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": kube_version}, "paths": paths,
            "components": {"schemas": schemas}}
