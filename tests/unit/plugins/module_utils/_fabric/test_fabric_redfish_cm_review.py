"""The Cluster Manager and Redfish backends against their public references (issue #19, item 6), on the HTTPS simulator.

- FTI CM: CoHDI composable-resource-operator ``internal/cdi/fti/cm/client.go`` (``RemoveResource``: ``remove_resources``
  with ``device_count: deviceCount - 1`` where ``checkRemovingResources`` returns the spec's ``resourceSpec.DeviceCount``;
  ``AddResource``: ``increase_resource_count`` ``DeviceCount + 1``) and ``internal/cdi/fti/cm/api/machine.go``
  (``ResourceSpec.DeviceCount`` ``device_count``, ``Device.DeviceUUID`` ``device_id``, ``DeviceDetail.ResourceUUID``).
- Redfish: the DMTF ResourceBlock schema (v1_4: ``Processors`` and ``Memory`` are arrays of links to Processor / Memory
  resources; ``CompositionState`` ``Unavailable``), ComputerSystem (``Actions`` ``#ComputerSystem.AddResourceBlock``
  ``target``), ServiceRoot (``ProtocolFeaturesSupported.ExpandQuery``) and the Redfish specification's error responses
  (``error.code``, ``error.message``, ``@Message.ExtendedInfo``) and unsupported ``$`` query parameters (501).
"""

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.redfish import STATES
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import FAILED
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target


def test_cm_remove_sends_the_specs_device_count_minus_one_as_cro_does(fab):
    seeded = fab.control.seed(fab.machines[0], "A100", 2)
    # a third device is still being added and not listed yet: the spec says 3, two are listed
    spec_uuid = fab.control.set_spec_count(fab.machines[0], "A100", 3)["spec_uuid"]
    fab.control.clear_requests()
    result, error = fab.run([Target(machine_id=fab.machines[0], state="absent", devices=[seeded[0]["res_uuid"]])], "fti_cm")
    assert error is None, error.msg
    assert [d["res_uuid"] for d in result["detached"]] == [seeded[0]["res_uuid"]]
    bodies = [e["body"] for e in fab.mutations("detach")]
    assert bodies == [{"remove_resources": {"spec_uuid": spec_uuid, "device_count": 2, "devices": [seeded[0]["serial"]]}}], bodies


def test_cm_add_sends_the_specs_device_count_plus_one(fab):
    fab.control.seed(fab.machines[0], "A100", 1)
    fab.control.clear_requests()
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=2)], "fti_cm")
    assert error is None, error.msg
    bodies = [e["body"] for e in fab.mutations("attach")]
    assert [b["increase_resource_count"]["device_count"] for b in bodies] == [2], bodies


def test_redfish_reads_model_and_serial_from_the_linked_processor(fab):
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert error is None, error.msg
    device = result["devices"][0]
    on_fabric = fab.devices()[0]
    assert (device["model"], device["serial"]) == ("A100", on_fabric["serial"]) and device["serial"]
    parts = [e for e in fab.control.requests() if e["route"] == "rf.part"]
    assert any(e["path"] == "/redfish/v1/CompositionService/ResourceBlocks/%s/Processors/0" % device["res_uuid"] for e in parts), parts
    # each linked Processor is read once per run
    assert len(set(e["path"] for e in parts)) == len(parts)


def test_redfish_cxl_memory_reads_the_linked_memory_resource(fab):
    result, error = fab.run([Target(machine_id=fab.machines[0], dtype="cxlmemory", count=1)], "redfish")
    assert error is None, error.msg
    assert result["devices"][0]["type"] == "cxlmemory" and result["devices"][0]["serial"] == fab.devices()[0]["serial"]


def test_redfish_sends_expand_only_when_the_service_root_supports_it(fab):
    fab.control.clear_requests()
    done, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert error is None
    assert any("$expand" in (e.get("query") or {}) for e in fab.control.requests() if e["route"] == "rf.blocks")

    fab.control.reset(machines=4, rf_expand=False)  # no ProtocolFeaturesSupported.ExpandQuery: $expand would be a 501
    try:
        fab.control.clear_requests()
        done, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
        assert error is None, error.msg
        assert len(done["attached"]) == 1
        blocks = [e for e in fab.control.requests() if e["route"] == "rf.blocks"]
        assert blocks and not any("$expand" in (e.get("query") or {}) for e in blocks)
    finally:
        fab.control.reset(machines=4, rf_expand=True)


def test_redfish_action_targets_are_the_ones_the_system_advertises(fab):
    # a service that advertises its actions elsewhere than the conventional Systems/<id>/Actions/: a URI built by
    # convention would be a 404 there
    fab.control.reset(machines=4, rf_actions="Oem")
    try:
        fab.control.clear_requests()
        done, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
        assert error is None, error.msg
        [attach] = fab.mutations("attach")
        assert attach["path"] == "/redfish/v1/Systems/%s/Oem/ComputerSystem.AddResourceBlock" % fab.machines[0]
        assert attach["body"]["ResourceBlock"]["@odata.id"].startswith("/redfish/v1/CompositionService/ResourceBlocks/")
        done, error = fab.run([Target(machine_id=fab.machines[0], model="A100", state="absent")], "redfish")
        assert error is None, error.msg
        [detach] = fab.mutations("detach")
        assert detach["path"] == "/redfish/v1/Systems/%s/Oem/ComputerSystem.RemoveResourceBlock" % fab.machines[0]
        assert fab.devices() == []
    finally:
        fab.control.reset(machines=4, rf_actions="Actions")


def test_redfish_error_text_includes_the_extended_info_message(fab):
    fab.control.fault(op="attach", action="error", status=409, body="redfish_extended", message="Resource block 'b-7' is in use.")
    _result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert error is not None
    assert ("Base.1.8.GeneralError: A general error has occurred. See ExtendedInfo for more information. - Resource block 'b-7' is in use."
            in error.msg), error.msg
    assert fab.devices() == []


def test_redfish_unavailable_block_is_failed():
    assert STATES["Unavailable"] == FAILED
