"""Clearing a pending helm revision is opt-in, and its age is measured with the API server's clock, not this host's."""

import time
import types

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import Deployer
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import DeployedRelease


class Cluster:
    def __init__(self, server_now):
        self.server_now = server_now
        self.deleted = []

    def server_time(self):
        return self.server_now

    def delete(self, api_version, kind, name, namespace=None):
        self.deleted.append((kind, namespace, name))
        return True


def pending(created_epoch):
    created = timeutil.millis_from_epoch(created_epoch)[:19] + "Z"
    return DeployedRelease({"metadata": {"name": "sh.helm.release.v1.r.v3", "namespace": "ns", "creationTimestamp": created,
                                         "labels": {"name": "r", "version": "3", "status": "pending-upgrade", "owner": "helm"}}}, None)


def engine(cluster, clear_pending, timeout=60):
    """A Deployer alone, over a context holding only what clearing a pending revision reads and records."""
    actions = []
    ctx = types.SimpleNamespace(cluster=cluster, opts=types.SimpleNamespace(clear_pending=clear_pending, timeout=timeout),
                                action=actions.append, actions=actions)
    return Deployer(ctx, surveyor=None, charts=None, crds=None, early=None, remover=None, namespaces=None)


COMP = types.SimpleNamespace(name="r", namespace="ns")


def test_without_clear_pending_an_old_pending_revision_is_left_alone():
    now = time.time()
    cluster = Cluster(server_now=now)
    with pytest.raises(AicrError) as err:
        engine(cluster, False).clear_interrupted(COMP, pending(now - 3600))
    assert "set clear_pending: true" in err.value.msg and cluster.deleted == []


def test_age_is_the_servers_whatever_this_hosts_clock_says():
    created = time.time() - 3600
    # this host's clock is an hour ahead of the server's: by its clock the revision is old, by the server's it is 10 s old
    young = Cluster(server_now=created + 10)
    with pytest.raises(AicrError) as err:
        engine(young, True).clear_interrupted(COMP, pending(created))
    assert "another helm operation may still be running" in err.value.msg and young.deleted == []
    # and the other way round: this host's clock is behind, the server says the revision is older than timeout
    created = time.time()
    old = Cluster(server_now=created + 120)
    run = engine(old, True)
    run.clear_interrupted(COMP, pending(created))
    assert old.deleted == [("Secret", "ns", "sh.helm.release.v1.r.v3")]
    assert run.ctx.actions and run.ctx.actions[0].startswith("clear the interrupted helm operation on r (revision 3, pending-upgrade")
