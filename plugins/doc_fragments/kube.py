# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Cluster connection options (``module_utils/_kube/connection.py`` ``KUBE_ARG_SPEC``) and readiness wait options."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig content as a dictionary.
      - Without it, AWX's Kubernetes credential variables are used as kubernetes.core uses them - C(K8S_AUTH_KUBECONFIG),
        else C(K8S_AUTH_HOST) with C(K8S_AUTH_API_KEY), C(K8S_AUTH_SSL_CA_CERT) and C(K8S_AUTH_VERIFY_SSL) - then
        C($KUBECONFIG), then C(~/.kube/config), then the in-cluster service account, as kubectl does. helm is given
        exactly the same cluster and credentials.
      - Given as a dictionary, its secrets - users' C(token), C(password) and C(client-key-data), auth-provider tokens
        and client secrets, exec plugins' environment values - are masked in all of the task's output (they are added
        to the module's no_log values at run time); names, servers, CA and certificate data stay readable, so results
        are not mangled by masking.
    type: raw
  context:
    description:
      - The kubeconfig context to use; C(K8S_AUTH_CONTEXT), else the current context, when omitted.
    type: str
notes:
  - A kubeconfig is checked before it is used - YAML, a mapping listing clusters and contexts, the context (given or its
    C(current-context)) present with the cluster and user it names - and one that is not fails in one line naming
    C(kubeconfig) and the file, never quoting its content.
  - Every request to the API server is bounded, its connection included - an API server that accepts the connection and
    never answers fails the task in one line naming the deadline that ran out. A request and its retries get at most
    30 seconds, or what is left of the task's own deadline when it has one (gated_release's C(timeout) and
    C(overall_timeout), fabric_device's C(timeout)).
"""

    WAIT = r"""
options:
  timeout:
    description:
      - Seconds one component may take, from the moment its gate opens until it is Ready
        (objects applied, release installed, every resource current).
      - A component that runs out of time fails and names the first resource that is not ready.
      - It also bounds how long an API server that stops answering is waited for - a restart, a pause - within the
        component - its reads retried (no answer, 429, 5xx), its helm run again when helm found the cluster unreachable.
      - With O(clear_pending), a release whose latest revision has been C(pending-install), C(pending-upgrade) or
        C(pending-rollback) for longer than this (by the API server's clock) is taken as an interrupted helm operation -
        its revision record is removed and the release installed or upgraded again; a younger one fails the component
        (someone may be running helm on it). Without O(clear_pending) any pending revision fails the component.
      - More than 0 and at most 604800 (a week); 0 or a negative number is refused, never taken as the default.
    type: int
    default: 600
  overall_timeout:
    description:
      - More than 0 and at most 604800 (a week); 0 or a negative number is refused, never taken as the default.
      - Seconds the whole run may take. No component is started after it; running ones stop waiting.
      - It bounds every request to the API server, its connection included - the first read as much as the last - so an
        API server that accepts the connection and never answers fails the task when it runs out, naming it
        (C(no answer within overall_timeout (30s))). After it the run still records what it did in its inventory and
        releases its Lease, each given at most 15 seconds.
    type: int
    default: 3600
  poll_interval:
    description:
      - Readiness is observed with a watch on the resource a component is waiting for, so it is seen as soon as
        the cluster reports it. O(poll_interval) is the pause between two reads when a watch cannot be opened
        (or keeps ending at once).
      - More than 0 and at most 60 seconds; 0 or a negative number is refused, never taken as the default.
    type: float
    default: 0.5
"""
