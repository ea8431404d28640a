"""Fixtures shared by the module tests: the cluster ones (``kube``, ``private_kube``, ``lab_kube``) come from
``aicr_lab.pytest_plugin`` (a real control plane), ``clusterstack_crd`` and ``stacks`` from ``tests/unit/plugins/conftest.py``."""
