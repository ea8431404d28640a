# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Load an AICR recipe catalog (a ``recipes/`` directory or a ``.tar.gz`` of one).

* Every file is read once (``files``); the catalog digest is sha256 over the sorted relative
  paths and their bytes, so the same content always has the same digest.
* Recipe metadata (overlays, mixins, registry) is parsed once with the collection's YAML loader
  (``_common.deps.Loader``: libyaml's ``CSafeLoader`` when available); values files are
  parsed on first use; manifests and health checks are read as text on demand.
* Parsed catalogs are cached per process by (root, digest). The parsed metadata
  can also be persisted as JSON under a cache directory (``cache_dir``), keyed
  by digest, so a fresh process (each Ansible module run) skips YAML parsing.
* A tarball is unpacked once into ``<cache_dir>/catalogs/<digest>/`` so every
  manifest has a stable absolute path.
* ``cache_dir`` must be private to this user (``jsoncache.private_dir_problem``: created 0700 when missing, else a real
  directory of this user's that group and others cannot write); a given one that is not is refused, the default
  one is then not used. Symlinks, loops and size caps: see ``files``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps, jsoncache
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import files as catalog_files
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import order

RECIPE_METADATA_KIND = "RecipeMetadata"
RECIPE_MIXIN_KIND = "RecipeMixin"
COMPONENT_REGISTRY_KIND = "ComponentRegistry"
CACHE_FORMAT = 1

_PROCESS_CACHE = {}
_SIGNATURES = {}  # directory -> (file name/size/mtime signature, digest): skip re-reading unchanged trees

_MIXIN_TOP_KEYS = ("kind", "apiVersion", "metadata", "spec")
_MIXIN_SPEC_KEYS = ("constraints", "componentRefs")


def parse_yaml(data, relpath):
    """Parse one YAML document; a syntax error names the file and line."""
    try:
        return deps.load(data, "catalog file %s" % relpath)
    except deps.yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        column = mark.column + 1 if mark is not None else 0
        cause = exc.problem or exc.context or "invalid YAML"
        raise AicrError(
            "catalog file %s: malformed YAML at line %d, column %d: %s" % (relpath, line, column, cause),
            file=relpath, line=line, column=column,
        )
    except deps.yaml.YAMLError as exc:
        raise AicrError("catalog file %s: malformed YAML: %s" % (relpath, str(exc).splitlines()[0]), file=relpath)


class Catalog(object):
    """A parsed catalog: base, overlays, mixins, registry; values and manifests on demand."""

    def __init__(self, root, digest, files, source):
        self.root = root
        self.digest = digest
        self.source = source
        self.files = frozenset(files)
        self.base = None
        self.base_path = None
        self.overlays = {}
        self.overlay_paths = {}
        self.mixins = {}
        self.mixin_paths = {}
        self.registry = {}
        self.registered = dict((dim, set()) for dim in crit.DIMENSIONS)
        self._values = {}
        self._texts = {}

    # -- file access -----------------------------------------------------------------
    def abspath(self, relpath):
        return os.path.join(self.root, *relpath.split("/"))

    def has_file(self, relpath):
        return relpath in self.files

    def read_text(self, relpath, field=None):
        text = self._texts.get(relpath)
        if text is None:
            if relpath not in self.files:
                raise AicrError("%s: file %s not found in catalog %s" % (field or "catalog", relpath, self.source), file=relpath)
            with open(self.abspath(relpath), "rb") as handle:
                text = bounded.read_bounded(handle, "catalog file %s" % relpath).decode("utf-8")
            self._texts[relpath] = text
        return text

    def values_doc(self, relpath, field=None):
        """Parsed values file (a mapping), cached. Missing -> AicrError naming ``field``."""
        if relpath in self._values:
            return self._values[relpath]
        if relpath not in self.files:
            raise AicrError("%s: values file %s not found in catalog %s" % (field or "valuesFile", relpath, self.source), file=relpath)
        with open(self.abspath(relpath), "rb") as handle:
            doc = parse_yaml(bounded.read_bounded(handle, "catalog file %s" % relpath), relpath)
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise AicrError("catalog file %s: values must be a mapping, got %s" % (relpath, type(doc).__name__), file=relpath)
        self._values[relpath] = doc
        return doc

    # -- loading ---------------------------------------------------------------------
    def classify(self, docs):
        """Sort parsed documents into base/overlays/mixins/registry and validate them."""
        for relpath in sorted(docs):
            doc = docs[relpath]
            if relpath == "registry.yaml":
                self._load_registry(relpath, doc)
            elif relpath.startswith("mixins/"):
                self._load_mixin(relpath, doc)
            elif isinstance(doc, dict) and doc.get("kind") == RECIPE_METADATA_KIND:
                self._load_metadata(relpath, doc)
        if self.base is None:
            raise AicrError("catalog %s: overlays/base.yaml (kind RecipeMetadata) not found; an AICR recipes/ directory needs it" % self.source,
                            field="catalog", value=self.source)
        if "registry.yaml" not in docs:
            raise AicrError("catalog %s: registry.yaml not found; an AICR recipes/ directory needs its component registry" % self.source,
                            field="catalog", value=self.source)
        self._check_inheritance()
        order.validate_dependencies(self.base["spec"].get("componentRefs") or [], where="%s spec.componentRefs" % self.base_path)

    def _load_registry(self, relpath, doc):
        if not isinstance(doc, dict) or not isinstance(doc.get("components"), list):
            raise AicrError("catalog file %s: expected kind ComponentRegistry with a components list" % relpath, file=relpath)
        for index, entry in enumerate(doc["components"]):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
                raise AicrError("catalog file %s: components[%d] needs a non-empty name" % (relpath, index), file=relpath)
            if entry["name"] in self.registry:
                raise AicrError("catalog file %s: duplicate component %r in the registry" % (relpath, entry["name"]), file=relpath)
            self.registry[entry["name"]] = entry

    def _load_mixin(self, relpath, doc):
        if not relpath.endswith(".yaml"):
            return
        if not isinstance(doc, dict) or doc.get("kind") != RECIPE_MIXIN_KIND:
            kind = doc.get("kind") if isinstance(doc, dict) else None
            raise AicrError("mixin file %s has kind %r, expected %r" % (relpath, kind, RECIPE_MIXIN_KIND), file=relpath)
        unknown = [k for k in doc if k not in _MIXIN_TOP_KEYS]
        spec = doc.get("spec") or {}
        if not isinstance(spec, dict):
            raise AicrError("mixin file %s: spec must be a mapping" % relpath, file=relpath)
        unknown += ["spec.%s" % k for k in spec if k not in _MIXIN_SPEC_KEYS]
        if unknown:
            raise AicrError("failed to parse mixin %s (unknown fields are not allowed): field %s (allowed: spec.constraints, spec.componentRefs)"
                            % (relpath, unknown[0]), file=relpath)
        name = (doc.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            raise AicrError("mixin file %s: metadata.name is required" % relpath, file=relpath)
        if name in self.mixins:
            raise AicrError("duplicate mixin name %r in %s (first defined in %s)" % (name, relpath, self.mixin_paths[name]),
                            file=relpath, mixin=name)
        _check_refs(spec.get("componentRefs"), relpath)
        self.mixins[name] = spec
        self.mixin_paths[name] = relpath

    def _load_metadata(self, relpath, doc):
        name = (doc.get("metadata") or {}).get("name")
        spec = doc.get("spec")
        if spec is None:
            spec = {}
            doc["spec"] = spec
        if not isinstance(spec, dict):
            raise AicrError("catalog file %s: spec must be a mapping" % relpath, file=relpath)
        for key in ("constraints", "componentRefs", "mixins"):
            if spec.get(key) is not None and not isinstance(spec[key], list):
                raise AicrError("catalog file %s: spec.%s must be a list" % (relpath, key), file=relpath)
        _check_refs(spec.get("componentRefs"), relpath)
        if relpath == "overlays/base.yaml":
            self.base = doc
            self.base_path = relpath
            return
        if not isinstance(name, str) or not name:
            raise AicrError("catalog file %s: metadata.name is required for an overlay" % relpath, file=relpath)
        if name in self.overlays:
            raise AicrError("catalog file %s: duplicate overlay name %r (also in %s)" % (relpath, name, self.overlay_paths[name]), file=relpath)
        criteria = spec.get("criteria")
        if criteria is not None:
            if not isinstance(criteria, dict):
                raise AicrError("catalog file %s: spec.criteria must be a mapping" % relpath, file=relpath)
            for dim in crit.DIMENSIONS:
                value = criteria.get(dim)
                if value is not None and not isinstance(value, str):
                    raise AicrError("catalog file %s: spec.criteria.%s must be a string, got %r" % (relpath, dim, value), file=relpath)
                if crit.is_stated(value):
                    self.registered[dim].add(crit.normalise_value(value))
        self.overlays[name] = doc
        self.overlay_paths[name] = relpath

    def _check_inheritance(self):
        for name in sorted(self.overlays):
            seen = [name]
            current = self.overlays[name]
            while True:
                parent = current["spec"].get("base") or ""
                if parent in ("", "base"):
                    break
                if parent not in self.overlays:
                    relpath = self.overlay_paths[seen[-1]]
                    raise AicrError("catalog file %s: spec.base %r not found (overlay %r; a base must name another overlay or 'base')"
                                    % (relpath, parent, seen[-1]), file=relpath, overlay=seen[-1], base=parent)
                if parent in seen:
                    relpath = self.overlay_paths[name]
                    raise AicrError("catalog file %s: circular inheritance detected: %s" % (relpath, " -> ".join(seen + [parent])),
                                    file=relpath, overlay=name)
                seen.append(parent)
                current = self.overlays[parent]

    def chain(self, name):
        """Overlay metadata from the root (excluding base) down to ``name``."""
        out = []
        current = name
        while current not in ("", "base"):
            doc = self.overlays[current]
            out.append(doc)
            current = doc["spec"].get("base") or ""
        out.reverse()
        return out

    def leaves(self):
        """Overlays no other overlay names as its spec.base."""
        parents = set(doc["spec"].get("base") for doc in self.overlays.values())
        return sorted(name for name in self.overlays if name not in parents)


def _check_refs(refs, relpath):
    for index, ref in enumerate(refs or []):
        if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref.get("name"):
            raise AicrError("catalog file %s: componentRefs[%d] needs a non-empty name" % (relpath, index), file=relpath)
        for key in ("dependencyRefs", "manifestFiles", "preManifestFiles", "patches"):
            if ref.get(key) is not None and not isinstance(ref[key], list):
                raise AicrError("catalog file %s: componentRefs[%d] (%s).%s must be a list" % (relpath, index, ref["name"], key), file=relpath)
        if ref.get("overrides") is not None and not isinstance(ref["overrides"], dict):
            raise AicrError("catalog file %s: componentRefs[%d] (%s).overrides must be a mapping" % (relpath, index, ref["name"]), file=relpath)


def _metadata_paths(entries):
    """Files parsed eagerly: YAML outside checks/, components/ (values are lazy) and manifests."""
    out = []
    for relpath in entries:
        if not relpath.endswith((".yaml", ".yml")):
            continue
        if relpath.startswith(("checks/", "components/")) or "/checks/" in relpath or "/components/" in relpath:
            continue
        out.append(relpath)
    return out


def _load_cached_docs(cache_dir, digest):
    if not cache_dir:
        return None
    payload = jsoncache.load(os.path.join(cache_dir, "parsed", digest.split(":", 1)[1] + ".json"))
    if not isinstance(payload, dict) or payload.get("format") != CACHE_FORMAT or payload.get("digest") != digest:
        return None
    return payload.get("docs")


def _store_cached_docs(cache_dir, digest, docs):
    if not cache_dir:
        return False
    try:
        text = json.dumps({"format": CACHE_FORMAT, "digest": digest, "docs": docs})
        if json.loads(text)["docs"] != docs:  # a YAML type JSON cannot carry: do not cache
            return False
    except (TypeError, ValueError):
        return False
    return jsoncache.store(os.path.join(cache_dir, "parsed", digest.split(":", 1)[1] + ".json"), text)


def load_catalog(path, cache_dir=None, persist=True, write_cache=True):
    """Load (or fetch from the process cache) the catalog at ``path``.

    ``cache_dir``: where tarballs are unpacked and parsed metadata is persisted
    (``None`` -> ``jsoncache.default_cache_dir``). ``persist=False`` disables the parsed
    metadata cache on disk (tarballs are still unpacked, to a temp dir if needed);
    ``write_cache=False`` reads an existing cache entry but never writes one (check mode).
    """
    if not deps.HAS_YAML:
        raise AicrError("catalog: the PyYAML Python library is required to read recipe catalogs", missing_library="PyYAML")
    if not isinstance(path, str) or not path:
        raise AicrError("catalog: a path to an AICR recipes/ directory or a .tar.gz of one is required", field="catalog")
    source = os.path.abspath(os.path.expanduser(path))
    # a cache_dir given (the option, or $AICR_RUNTIME_CACHE_DIR) that is not private to this user is refused; the default
    # one is then just not used (jsoncache.checked_cache_dir)
    cache_dir, given = jsoncache.chosen_cache_dir(cache_dir)
    if os.path.lexists(source) and not os.path.exists(source):
        raise AicrError("catalog: %s is a broken symlink or a symlink loop (give a recipes/ directory or a .tar.gz of one)" % path,
                        field="catalog", value=path)
    if os.path.isdir(source):
        scan = catalog_files.scan_directory(source)
        signature = tuple((item[0], item[2], item[3]) for item in scan)
        known = _SIGNATURES.get(source)
        if known is not None and known[0] == signature and (source, known[1]) in _PROCESS_CACHE:
            return _PROCESS_CACHE[(source, known[1])]
        entries = catalog_files.read_directory(scan)
        digest = catalog_files.content_digest(entries)
        _SIGNATURES[source] = (signature, digest)
        root = source
        cache_dir = jsoncache.checked_cache_dir(cache_dir, given, create=write_cache) if persist else None
    elif os.path.isfile(source):
        if not source.endswith((".tar.gz", ".tgz")):
            raise AicrError("catalog: %s is a file but not a .tar.gz/.tgz archive (give a recipes/ directory or a .tar.gz of one)" % path,
                            field="catalog", value=path)
        entries = catalog_files.read_tarball(source)
        digest = catalog_files.content_digest(entries)
        root = None
        cache_dir = jsoncache.checked_cache_dir(cache_dir, given)  # the archive is unpacked there, check mode too
    else:
        raise AicrError("catalog: %s does not exist (give a recipes/ directory or a .tar.gz of one)" % path, field="catalog", value=path)

    key = (source, digest)
    cached = _PROCESS_CACHE.get(key)
    if cached is not None:
        return cached
    if root is None:
        root = catalog_files.unpack(entries, cache_dir, digest)

    docs = _load_cached_docs(cache_dir, digest) if persist else None
    from_disk = docs is not None
    if docs is None:
        docs = {}
        for relpath in _metadata_paths(entries):
            docs[relpath] = parse_yaml(entries[relpath], relpath)
    catalog = Catalog(root, digest, entries.keys(), source)
    catalog.from_disk_cache = from_disk
    catalog.cache_written = False
    if persist and write_cache and not from_disk:
        # Only the documents classify() uses; others (evidence, validators) were parsed to be skipped.
        relevant = dict((p, d) for p, d in docs.items()
                        if p == "registry.yaml" or p.startswith("mixins/") or (isinstance(d, dict) and d.get("kind") == RECIPE_METADATA_KIND))
        catalog.cache_written = _store_cached_docs(cache_dir, digest, relevant)
    catalog.classify(docs)
    _PROCESS_CACHE[key] = catalog
    return catalog


def clear_process_cache():
    _PROCESS_CACHE.clear()
    _SIGNATURES.clear()
