"""The GCP (managed instance group) and Azure (VM scale set) groups against fakes of their SDK clients, shaped as the
SDKs' objects are (attribute names checked against google-cloud-compute 1.56 / azure-mgmt-compute 39 and
azure-mgmt-network 33 models). They have not run against the real APIs. Without the extras installed, each says
which extra it needs."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace as NS
from typing import Any

import pytest

from aicluster.burst.azure import AzureGroup
from aicluster.burst.cloud import NODE_TAG, CloudError, MissingExtra, open_group
from aicluster.burst.config import AzureNodeSet, GcpNodeSet
from aicluster.burst.gcp import LABEL, GcpGroup
from aicluster.burst.resume import resume_group
from aicluster.burst.sync import sync_group
from tests.burst.fakes import FakeSlurm

GCP_SET = GcpNodeSet(provider="gcp", nodes="gcp-[0-1]", project="my-project", region="us-central1",
                     zone="us-central1-a", group="mig", instance_type="a3-highgpu-8g", market="spot")  # fmt: skip
AZ_SET = AzureNodeSet(provider="azure", nodes="az-[0-1]", subscription_id="00000000-0000-0000-0000-000000000000",
                      resource_group="rg", region="eastus",
                      group="vmss", instance_type="Standard_ND96isr_H100_v5")  # fmt: skip


class Done:
    """A finished operation (ExtendedOperation / LROPoller)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.error_message = None

    def result(self, timeout: float | None = None) -> None:
        if self.error is not None:
            raise self.error

    def done(self) -> bool:
        return True


class FakeMig:
    """InstanceGroupManagersClient + InstancesClient of one zonal MIG."""

    def __init__(self, errors: list[Any] | None = None) -> None:
        self.target = 0
        self.vms: dict[str, Any] = {}
        self.errors = errors or []
        self.deleted: list[str] = []
        self.refuse: Exception | None = None

    # InstanceGroupManagersClient
    def get(self, **where: str) -> Any:
        return NS(target_size=self.target)

    def resize(self, *, size: int, **where: str) -> Done:
        if self.refuse is not None:
            raise self.refuse
        for i in range(self.target, size):
            name = f"mig-{i:04d}"
            self.vms[name] = NS(name=name, labels={}, label_fingerprint=f"fp-{name}", status="RUNNING",
                                network_interfaces=[NS(network_i_p=f"10.1.0.{i + 2}")],
                                creation_timestamp="2026-11-24T00:00:00.000-08:00")  # fmt: skip
        self.target = size
        return Done()

    def list_managed_instances(self, **where: str) -> list[Any]:
        url = "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/"
        return [NS(instance=url + n, instance_status=vm.status, current_action="NONE") for n, vm in self.vms.items()]

    def list_errors(self, **where: str) -> list[Any]:
        return self.errors

    def delete_instances(self, *, instance_group_managers_delete_instances_request_resource: Any, **where: str) -> Done:
        for url in instance_group_managers_delete_instances_request_resource.instances:
            name = url.rsplit("/", 1)[-1]
            self.deleted.append(name)
            self.vms.pop(name)
            self.target -= 1
        return Done()

    # InstancesClient
    def list(self, project: str, zone: str, timeout: float) -> list[Any]:
        return list(self.vms.values())

    def get_vm(self, project: str, zone: str, instance: str, timeout: float) -> Any:
        return self.vms[instance]

    def set_labels(
        self, *, project: str, zone: str, instance: str, instances_set_labels_request_resource: Any, timeout: float
    ) -> Done:
        body = instances_set_labels_request_resource
        assert body.label_fingerprint == f"fp-{instance}"
        self.vms[instance].labels = dict(body.labels)
        return Done()


def gcp_group(mig: FakeMig) -> GcpGroup:
    vms = NS(list=mig.list, get=mig.get_vm, set_labels=mig.set_labels)
    requests = NS(InstancesSetLabelsRequest=NS, InstanceGroupManagersDeleteInstancesRequest=NS)
    return GcpGroup("mig", "p", "us-central1-a", mig, vms, requests)


def test_gcp_resume_resizes_the_mig_labels_the_instance_and_suspend_deletes_it() -> None:
    mig = FakeMig()
    group = gcp_group(mig)
    slurm = FakeSlurm()
    assert resume_group(group, ["gcp-0"], slurm, 5, 1) == {}
    assert mig.target == 1
    assert mig.vms["mig-0000"].labels == {LABEL: "gcp-0"}
    assert slurm.updates == [(("gcp-0",), {"nodeaddr": "10.1.0.2", "nodehostname": "mig-0000"})]
    group.remove([i.id for i in group.instances() if i.node == "gcp-0"])
    assert (mig.deleted, mig.target) == (["mig-0000"], 0)


def test_gcp_a_preempted_vm_powers_its_node_down() -> None:
    mig = FakeMig()
    group = gcp_group(mig)
    resume_group(group, ["gcp-0"], FakeSlurm(), 5, 1)
    mig.vms["mig-0000"].status = "TERMINATED"  # spot preemption
    slurm = FakeSlurm()
    slurm.node("gcp-0", "ALLOCATED+CLOUD")
    assert sync_group(group, slurm, "gcp-0", 600) == ["gcp-0"]
    reason = "aicluster-burst-sync: instance mig-0000 GCE status TERMINATED, MIG action NONE"
    assert slurm.updates[0][1]["reason"] == reason


def test_gcp_launch_errors_and_refusals_keep_the_clouds_words() -> None:
    error = NS(timestamp="2026-11-24T00:00:05.000-00:00", error=NS(code="ZONE_RESOURCE_POOL_EXHAUSTED",
               message="The zone 'us-central1-a' does not have enough resources available"))  # fmt: skip
    old = NS(timestamp="2026-11-01T00:00:00.000-00:00", error=NS(code="QUOTA_EXCEEDED", message="old"))
    group = gcp_group(FakeMig(errors=[old, error]))
    since = 1_795_478_400.0  # 2026-11-24T00:00:00Z
    assert group.failures(since) == [
        "ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'us-central1-a' does not have enough resources available"
    ]
    mig = FakeMig()
    mig.refuse = type("Forbidden", (Exception,), {"message": "Quota 'NVIDIA_H100_GPUS' exceeded. Limit: 0.0"})()
    with pytest.raises(CloudError, match=r"^Forbidden: Quota 'NVIDIA_H100_GPUS' exceeded\. Limit: 0\.0$"):
        gcp_group(mig).resize(1)


class FakeScaleSet:
    """ComputeManagementClient + NetworkManagementClient of one VM scale set."""

    def __init__(self) -> None:
        self.capacity = 0
        self.vms: dict[str, Any] = {}
        self.deleted: list[str] = []
        self.refuse: Exception | None = None
        self.compute = NS(
            virtual_machine_scale_sets=NS(get=self.get, begin_update=self.update, begin_delete_instances=self.delete),
            virtual_machine_scale_set_vms=NS(list=self.list, get=self.get_vm, begin_update=self.update_vm),
        )
        self.network = NS(network_interfaces=NS(list_virtual_machine_scale_set_network_interfaces=self.nics))

    def get(self, rg: str, name: str) -> Any:
        return NS(sku=NS(name="Standard_ND96isr_H100_v5", tier="Standard", capacity=self.capacity))

    def update(self, rg: str, name: str, body: Any) -> Done:
        if self.refuse is not None:
            return Done(self.refuse)
        for i in range(self.capacity, body.sku.capacity):
            view = NS(computer_name=f"vmss{i:06d}", statuses=[NS(code="ProvisioningState/succeeded"),
                                                              NS(code="PowerState/running")])  # fmt: skip
            self.vms[str(i)] = NS(instance_id=str(i), id=f"/subs/rg/vmss/virtualMachines/{i}", name=f"vmss_{i}",
                                  tags=None, provisioning_state="Succeeded", instance_view=view)  # fmt: skip
        self.capacity = body.sku.capacity
        return Done()

    def delete(self, rg: str, name: str, ids: Any) -> Done:
        for i in ids.instance_ids:
            self.deleted.append(i)
            self.vms.pop(i)
            self.capacity -= 1
        return Done()

    def list(self, rg: str, name: str, expand: str) -> list[Any]:
        assert expand == "instanceView"
        return list(self.vms.values())

    def get_vm(self, rg: str, name: str, instance_id: str) -> Any:
        return self.vms[instance_id]

    def update_vm(self, rg: str, name: str, instance_id: str, vm: Any) -> Done:
        self.vms[instance_id] = vm
        return Done()

    def nics(self, rg: str, name: str) -> list[Any]:
        return [NS(virtual_machine=NS(id=vm.id.upper()), ip_configurations=[NS(private_ip_address=f"10.2.0.{k}")])
                for k, vm in enumerate(self.vms.values(), start=4)]  # fmt: skip


def azure_group(vmss: FakeScaleSet) -> AzureGroup:
    models = NS(VirtualMachineScaleSetUpdate=NS, Sku=NS, VirtualMachineScaleSetVMInstanceRequiredIDs=NS)
    return AzureGroup("vmss", "rg", vmss.compute, vmss.network, models)


def test_azure_resume_raises_capacity_tags_the_vm_and_suspend_deletes_it() -> None:
    vmss = FakeScaleSet()
    group = azure_group(vmss)
    slurm = FakeSlurm()
    assert resume_group(group, ["az-0", "az-1"], slurm, 5, 1) == {}
    assert vmss.capacity == 2
    assert {i: vm.tags for i, vm in vmss.vms.items()} == {"0": {NODE_TAG: "az-0"}, "1": {NODE_TAG: "az-1"}}
    assert slurm.updates == [
        (("az-0",), {"nodeaddr": "10.2.0.4", "nodehostname": "vmss000000"}),
        (("az-1",), {"nodeaddr": "10.2.0.5", "nodehostname": "vmss000001"}),
    ]
    group.remove([i.id for i in group.instances() if i.node == "az-1"])
    assert (vmss.deleted, vmss.capacity) == (["1"], 1)


def test_azure_an_allocation_failure_marks_the_nodes_down_with_its_code() -> None:
    vmss = FakeScaleSet()
    vmss.refuse = type("HttpResponseError", (Exception,), {})()
    vmss.refuse.error = NS(code="AllocationFailed", message="Allocation failed. We do not have sufficient capacity")  # type: ignore[attr-defined]
    failed = resume_group(azure_group(vmss), ["az-0"], FakeSlurm(), 5, 1)
    assert failed == {"az-0": "AllocationFailed: Allocation failed. We do not have sufficient capacity"}


def test_azure_an_evicted_spot_vm_is_not_alive() -> None:
    vmss = FakeScaleSet()
    group = azure_group(vmss)
    resume_group(group, ["az-0"], FakeSlurm(), 5, 1)
    vmss.vms["0"].instance_view.statuses = [NS(code="PowerState/deallocated")]
    (inst,) = group.instances()
    assert (inst.alive, inst.node) == (False, "az-0")
    assert inst.why_not == "Azure PowerState/deallocated, provisioning Succeeded"


@pytest.mark.parametrize(
    ("node_set", "module", "extra"),
    [
        pytest.param(GCP_SET, "google.cloud.compute_v1", "aicluster[gcp]", id="gcp"),
        pytest.param(AZ_SET, "azure.mgmt.compute", "aicluster[azure]", id="azure"),
    ],
)
def test_without_the_extra_the_group_says_which_to_install(node_set: Any, module: str, extra: str) -> None:
    try:
        installed = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        installed = False
    if installed:
        pytest.skip(f"{module} is installed")
    with pytest.raises(MissingExtra, match=rf"pip install '{re_escape(extra)}'"):
        open_group(node_set, "c")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
