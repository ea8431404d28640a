"""Fabric simulator: FTI Fabric Manager, FTI Cluster Manager and Redfish CompositionService over HTTPS.

One in-memory fabric (tenant, machines, a device pool by model) answers the three provider APIs,
a token endpoint (OAuth2 password grant issuing JWTs) and a control API under ``/_sim`` (reset,
state, faults, request log). See ``pytest_fixture.start_simulator`` and ``cli.main``.
"""
