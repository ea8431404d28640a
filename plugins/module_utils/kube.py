# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One way to build a Kubernetes API client, shared by every engine.

The collection only ever knows a kubeconfig (a path, or its parsed content) and an
optional context; it never knows whether a real apiserver or the local emulator
answers. Without a kubeconfig, ``$KUBECONFIG`` and then the in-cluster service
account are tried, as kubectl and kubernetes.core do.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

# Options every module that talks to a cluster accepts (see doc fragment aicr.runtime.kube).
KUBE_ARG_SPEC = dict(
    kubeconfig=dict(type="raw", no_log=True),
    context=dict(type="str"),
)


def build_api_client(kubeconfig=None, context=None):
    """Return a ``kubernetes.client.ApiClient`` for the given kubeconfig/context.

    ``kubeconfig`` is a path, a parsed kubeconfig dict, or None (``$KUBECONFIG``,
    then ``~/.kube/config``, then in-cluster).
    """
    if not HAS_KUBERNETES:
        raise AicrError("the Python package 'kubernetes' is required to talk to a cluster", exception=KUBERNETES_IMPORT_ERROR)
    configuration = k8s_client.Configuration()
    try:
        if isinstance(kubeconfig, dict):
            k8s_config.load_kube_config_from_dict(kubeconfig, context=context, client_configuration=configuration)
        elif kubeconfig:
            path = os.path.expanduser(str(kubeconfig))
            if not os.path.isfile(path):
                raise AicrError("kubeconfig: file %s does not exist" % path, field="kubeconfig")
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
        elif os.environ.get("KUBECONFIG") or os.path.isfile(os.path.expanduser("~/.kube/config")):
            k8s_config.load_kube_config(context=context, client_configuration=configuration)
        else:
            k8s_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        # The exception text can quote kubeconfig content; keep only its first line.
        reason = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        raise AicrError("kubeconfig/context: cannot load cluster configuration (%s)" % reason, field="kubeconfig", context=context)
    return k8s_client.ApiClient(configuration)
