# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Connection, authentication and TLS options of the composable-fabric APIs (FTI FM/CM, Redfish)."""

    DOCUMENTATION = r"""
options:
  provider:
    description:
      - Which fabric API to drive.
      - C(fti_fm) is the synchronous FTI CDI Fabric Manager (C(/fabric_manager/api/v1)).
      - C(fti_cm) is the asynchronous FTI CDI Cluster Manager (C(/cluster_manager/cluster_autoscaler/v3)); changes are polled until they complete.
      - C(redfish) is a DMTF Redfish CompositionService (ResourceBlocks composed into ComputerSystems), with HTTP basic authentication.
    type: str
    required: true
    choices: [fti_fm, fti_cm, redfish]
  endpoint:
    description:
      - Host and port of the fabric API (C(cdi.example.com:443)) or its C(https://) URL.
    type: str
    required: true
  tenant_id:
    description:
      - FTI tenant UUID (C(tenant_uuid)). Required for C(fti_fm) and C(fti_cm).
    type: str
  cluster_id:
    description:
      - FTI Cluster Manager cluster UUID. Required for C(fti_cm).
    type: str
  username:
    description:
      - User for the OAuth2 password grant (FTI) or HTTP basic authentication (Redfish).
    type: str
  password:
    description:
      - Password of O(username).
    type: str
  client_id:
    description:
      - OAuth2 client id at the FTI identity manager.
    type: str
  client_secret:
    description:
      - OAuth2 client secret at the FTI identity manager.
    type: str
  realm:
    description:
      - Identity-manager realm; the token comes from C(https://{endpoint}/id_manager/realms/{realm}/protocol/openid-connect/token).
    type: str
  credentials_secret:
    description:
      - A Kubernetes Secret holding any of the keys C(username), C(password), C(client_id), C(client_secret), C(realm).
      - Options given directly take precedence over the Secret's keys. Read with O(kubeconfig)/O(context).
    type: dict
    suboptions:
      name:
        description: Name of the Secret.
        type: str
        required: true
      namespace:
        description: Namespace of the Secret.
        type: str
        default: default
  ca_path:
    description:
      - PEM file with the CA certificate(s) the fabric endpoint's certificate must chain to.
      - Without it the system trust store is used.
    type: path
  validate_certs:
    description:
      - Verify the endpoint's TLS certificate. Set to V(false) only for throw-away test fabrics.
    type: bool
    default: true
  timeout:
    description:
      - Seconds each HTTP request may take. A mutation that times out is never blindly re-sent - the machine is re-read first.
      - More than 0 and at most 86400 (a day); 0 or less is refused before anything is contacted.
    type: float
    default: 30
notes:
  - One access token is requested per task run and cached until 30 seconds before its C(exp); a C(401) answer refreshes it once.
  - Credentials are never returned or logged.
  - O(timeout) bounds each request to the Kubernetes API server too (node, Secret, device record and Lease reads and writes,
    retries included), its connection included.
"""
