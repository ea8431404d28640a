# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""``on_failure: rollback``: what a failed gate leaves behind is rolled back to the last known good revision.

``on_failure: hold`` (the default) leaves a failed component as it is: its new revision stays, its dependents stay
blocked, a person decides. With ``rollback``, once the scheduler has finished and while the run still holds the stack's
Lease:

1. every component whose release this run *upgraded* (helm succeeded: a new revision is in place) and whose gate then
   failed - not Ready within its ``timeout``, or its health check failed - is rolled back with ``helm rollback`` to the
   revision the inventory records as its ``lastKnownGood`` (``_release.inventory``: the latest revision that passed its
   gate in a run of the stack);
2. then every component upgraded in this run that depends on it (the recipe's dependencies, transitively: with
   ``skip_deployment_order`` a dependent may have been upgraded before its dependency failed), in reverse dependency
   order, to its own ``lastKnownGood``.

As Flux's ``upgrade.remediation``, this remediates upgrades only: a release *installed* in this run has no earlier
revision; it is left as it is (status ``left``), never uninstalled. A component without a recorded ``lastKnownGood``
(installed or last upgraded before the collection recorded one) is not rolled back (``refused``).

A rollback is refused when it would change a CustomResourceDefinition of the chart in a way the breaking-change rules
(``_schema.compat``, crdify's) call breaking: the CRDs of the two revisions (those in the release manifest and the chart's
``crds/`` files helm stored with the release) are compared as "current -> rolled back"; a CRD the rolled-back revision no
longer has is breaking too (its custom resources would lose their schema).

A rollback - ``helm rollback`` and the wait until the rolled-back release is Ready - gets the component's ``timeout``
within what remains of ``overall_timeout`` (``rollback_budget``): none left, it is not started (``failed``, "out of
time"); not Ready when that runs out, it is reported rolled back but not Ready, "out of time".

Every decision is one entry ``{component, status, from, to, revision, reason, message}`` (status ``rolled_back``,
``refused``, ``failed`` or ``left``) in the component's result (``rollback``) and in the run's ``rollbacks``. Check mode
rolls nothing back; it lists, per component it would upgrade, the revision a failed gate would go back to.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FAILED, READY
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import decode_release_secret, read_release
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import manifest_docs, release_refs
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import last_known_good
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat

ON_FAILURE = ("hold", "rollback")
ROLLED_BACK, REFUSED, ROLLBACK_FAILED, LEFT = "rolled_back", "refused", "failed", "left"
CRD_KIND = "CustomResourceDefinition"


def release_crds(decoded):
    """``{name: CRD}`` of a decoded helm release: the CRDs of its manifest and of its chart's ``crds/`` files."""
    decoded = decoded or {}
    docs = list(manifest_docs(decoded.get("manifest")))
    for item in ((decoded.get("chart") or {}).get("files")) or []:
        name = str((item or {}).get("name") or "")
        if not name.startswith("crds/") or not name.endswith((".yaml", ".yml", ".json")):
            continue
        try:
            text = base64.b64decode(item.get("data") or "").decode("utf-8", "replace")
        except (binascii.Error, ValueError, TypeError):
            continue
        docs.extend(doc for doc in deps.load_all(text, "chart file %s" % name) if isinstance(doc, dict))
    return dict(((doc.get("metadata") or {}).get("name"), doc) for doc in docs if doc.get("kind") == CRD_KIND and (doc.get("metadata") or {}).get("name"))


def breaking_crd_change(current, target):
    """Why rolling back from the CRDs ``current`` to ``target`` (``{name: CRD}``) is breaking (the compat rules), or None."""
    reasons = []
    for name in sorted(current):
        if name not in target:
            reasons.append("CRD %s is not in the revision rolled back to" % name)
            continue
        if current[name].get("spec") == target[name].get("spec"):
            continue
        try:
            findings = compat.compare(current[name], target[name])
        except AicrError as exc:
            reasons.append("CRD %s cannot be compared (%s)" % (name, exc.msg))
            continue
        if any(f["severity"] == "error" for f in findings):
            reasons.append("CRD %s: %s" % (name, compat.summary(findings)))
    return "; ".join(reasons) or None


def rollback_budget(timeout, overall_deadline, now):
    """Seconds a rollback may take: the component's ``timeout`` within what remains of ``overall_timeout`` (``overall_deadline``,
    None: no overall bound); 0 when nothing remains."""
    if overall_deadline is None:
        return timeout
    return max(0.0, min(timeout, overall_deadline - now))


def dependents_of(plan, names):
    """Every component of ``plan`` that depends (the recipe's dependencies, transitively) on one of ``names``."""
    found, grew = set(), True
    roots = set(names)
    while grew:
        grew = False
        for name in plan.order:
            if name in found or name in roots:
                continue
            if any(d in roots or d in found for d in plan.by_name[name].dependencies or ()):
                found.add(name)
                grew = True
    return found


class RollBacker(object):
    """``on_failure: rollback`` for one run (``ctx``: a ``context.RunContext``), once the scheduler has finished."""

    def __init__(self, ctx):
        self.ctx = ctx

    def _upgraded_in_run(self, st):
        """This run upgraded the component's release: helm wrote a new revision over one deployed before."""
        return not st.comp.manifest_only and st.action == "upgrade" and st.deployed is not None and st.release_record is not None

    def roll_back_failed(self, overall_deadline=None):
        """Roll back what failed its gate and its upgraded dependents (see the module docstring), each within its ``timeout``
        and what remains of ``overall_timeout`` (``overall_deadline``); the entries."""
        entries = []
        failed = [n for n in self.ctx.plan.order if self.ctx.states[n].phase == FAILED]
        roots = [n for n in failed if self._upgraded_in_run(self.ctx.states[n])]
        for name in failed:
            st = self.ctx.states[name]
            if st.comp.manifest_only or st.release_record is None:
                continue  # no release of it changed (helm failed, or objects only): nothing to roll back
            if st.action == "install" or st.deployed is None:
                entries.append(self._decided(st, LEFT, "its gate failed", "installed in this run: there is no earlier revision to roll back "
                                             "to; left as it is (a first install is not remediated, as with Flux's upgrade.remediation)"))
        for name in roots:
            entries.append(self._roll_back(self.ctx.states[name], "its gate failed: %s" % self.ctx.states[name].message, overall_deadline))
        dependents = dependents_of(self.ctx.plan, roots)
        for name in reversed(self.ctx.plan.order):
            st = self.ctx.states[name]
            if name in dependents and st.phase == READY and self._upgraded_in_run(st):
                causes = [r for r in roots if r in dependencies_of(self.ctx.plan, name)]
                entries.append(self._roll_back(st, "upgraded in this run and depends on %s, which was rolled back" % ", ".join(causes),
                                               overall_deadline))
        return entries

    def _decided(self, st, status, reason, message, target=None, revision=None, source=None):
        entry = {"component": st.comp.name, "status": status, "from": source or st.revision, "to": target, "revision": revision,
                 "reason": reason, "message": message}
        st.rolled_back = entry
        if st.phase == FAILED or status == ROLLED_BACK:
            st.message = "%s; %s" % (st.message, message) if st.message else message
        self.ctx.transition(st)
        return entry

    def _roll_back(self, st, reason, overall_deadline=None):
        comp = st.comp
        good = last_known_good(self.ctx.inventory.loaded_entry(comp.name))
        if good is None:
            return self._decided(st, REFUSED, reason, "not rolled back: no last known good revision is recorded for it (one is recorded "
                                 "each time it passes its gate after an install or upgrade)")
        target, current = int(good["revision"]), st.revision
        if target == current:
            return self._decided(st, REFUSED, reason, "not rolled back: revision %s is its last known good" % target, target=target)
        try:
            breaking = breaking_crd_change(self._crds_of(comp, current), self._crds_of(comp, target))
        except AicrError as exc:
            breaking = "the CRDs of revisions %s and %s cannot be read (%s)" % (current, target, exc.msg)
        if breaking:
            return self._decided(st, REFUSED, reason, "rollback from revision %s to %s refused: it would be a breaking CRD change: %s"
                                 % (current, target, breaking), target=target)
        budget = rollback_budget(self.ctx.opts.timeout, overall_deadline, self.ctx.clock())
        if budget <= 0:
            return self._decided(st, ROLLBACK_FAILED, reason, "not rolled back from revision %s to %s: out of time (overall_timeout %gs spent)"
                                 % (current, target, self.ctx.opts.overall_timeout), target=target)
        deadline = self.ctx.clock() + budget  # helm rollback and the wait for Ready together
        try:
            self.ctx.helm.rollback(comp.name, comp.namespace, target, timeout=budget)
        except AicrError as exc:
            return self._decided(st, ROLLBACK_FAILED, reason, "rollback from revision %s to %s failed: %s" % (current, target, exc.msg), target=target)
        self.ctx.action("roll back %s from revision %s to %s (%s)" % (comp.name, current, target, reason))
        st.changed = True
        stored = read_release(self.ctx.cluster, comp.name, comp.namespace)
        revision = stored.revision if stored is not None else None
        if stored is not None:
            st.revision = revision
            st.release_record = {"uid": getattr(stored, "uid", None), "revision": revision, "digest": stored.digest or good.get("digest")}
        message = "rolled back from revision %s to %s (now revision %s)" % (current, target, revision)
        if stored is not None:
            try:
                self.ctx.wait_ready(comp, release_refs(self.ctx.cluster, manifest_docs(stored.manifest), comp.namespace),
                                    deadline, "release %s rolled back" % comp.name)
            except AicrError as exc:
                message += ", not Ready: %s" % exc.msg
                if self.ctx.clock() >= deadline:
                    message += " (out of time: %gs - its timeout within what remained of overall_timeout)" % budget
        return self._decided(st, ROLLED_BACK, reason, message, target=target, revision=revision, source=current)

    def _crds_of(self, comp, revision):
        secret = self.ctx.cluster.get("v1", "Secret", "sh.helm.release.v1.%s.v%s" % (comp.name, revision), comp.namespace)
        if secret is None:
            raise AicrError("release %s/%s revision %s is not stored" % (comp.namespace, comp.name, revision))
        return release_crds(decode_release_secret(secret))

    def planned(self):
        """Check mode: per component to be upgraded, the revision its rollback would go back to (actions); none with hold."""
        planned = []
        if self.ctx.opts.on_failure != "rollback":
            return planned
        for name in self.ctx.plan.order:
            st = self.ctx.states[name]
            if st.comp.manifest_only or st.action != "upgrade" or st.deployed is None:
                continue
            good = last_known_good(self.ctx.inventory.loaded_entry(name))
            planned.append("would roll back %s to revision %s if its gate fails (on_failure: rollback)" % (name, good["revision"]) if good else
                           "would not roll back %s if its gate fails: no last known good revision is recorded (on_failure: rollback)" % name)
        return planned


def dependencies_of(plan, name):
    """Every component ``name`` depends on (the recipe's dependencies, transitively)."""
    found, todo = set(), [name]
    while todo:
        for dep in plan.by_name[todo.pop()].dependencies or ():
            if dep in plan.by_name and dep not in found:
                found.add(dep)
                todo.append(dep)
    return found
