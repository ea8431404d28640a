# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Chart repository credentials (``module_utils/_helm/repositories.py`` ``REPOSITORY_CREDENTIALS_SPEC``)."""

    DOCUMENTATION = r"""
options:
  repository_credentials:
    description:
      - Credentials and TLS settings of chart repositories, each for the repository helm actually contacts (a
        mirror's URL where a mirror replaces the upstream one), matched exactly or by a C(/)-bounded prefix (the
        longest wins).
      - Given to helm only in files private to the run (0600, in a 0700 directory removed when the run ends, also on
        an error or SIGTERM), never on its command line nor in any message. An HTTP(S) repository becomes an entry
        of a private C(repositories.yaml) and its charts are referenced by that entry's name; an OCI registry's login
        is a private registry config (what C(helm registry login) writes).
      - Credentials travel only with the TLS settings of their own entry. A C(repository_mirrors) entry (gated_release; or a
        ClusterStack's C(spec.repositoryMirrors)) that sets C(insecure_skip_tls_verify) or C(plain_http) for a
        repository with an entry that does not is refused before anything is contacted.
      - A chart repository with an C(http://) URL, and an OCI registry spoken to with C(plain_http), are warned about
        once per run (charts travel in clear text); an C(http://) entry with a user name and password or a client
        certificate is refused unless that entry sets O(repository_credentials[].plain_http).
      - Works with helm 3 and helm 4.
    type: list
    elements: dict
    default: []
    suboptions:
      url:
        description:
          - Repository URL (C(https://...), C(http://...)) or OCI registry / path prefix (C(oci://host[:port][/path])).
        type: str
        required: true
      username:
        description: User name for basic authentication (HTTP) or the registry login (OCI).
        type: str
      password:
        description: Password or token; never shown.
        type: str
      ca_file:
        description: CA bundle (PEM) that signed the repository's server certificate.
        type: path
      cert_file:
        description: Client certificate (PEM) for repositories that require one; with O(repository_credentials[].key_file).
        type: path
      key_file:
        description: Key of O(repository_credentials[].cert_file).
        type: path
      insecure_skip_tls_verify:
        description: Do not verify the repository's certificate (a warning says so). Prefer O(repository_credentials[].ca_file).
        type: bool
        default: false
      plain_http:
        description:
          - OCI - talk to the registry over plain HTTP (no TLS), login included (a warning says so).
          - C(http://) repository - the consent to send this entry's password or client certificate in clear text; an
            C(http://) entry with either is refused without it. Not allowed for C(https://) entries.
        type: bool
        default: false
"""
