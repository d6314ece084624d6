"""Cloud TPU slices: one queued resource per slice for on-demand capacity (the request waits for capacity
instead of failing), or one TPU VM per slice for spot and reserved capacity, which the provider's queued
resource cannot ask for."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import PlannedPool


class GcpTpuSlicesArgs(TypedDict):
    pool: PlannedPool
    project: pulumi.Output[str]
    network_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    service_account_email: pulumi.Input[str]


class GcpTpuSlices(pulumi.ComponentResource):
    slice_names: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: GcpTpuSlicesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:TpuSlices", name, {}, opts)
        pool = args["pool"]
        t = pool.tpu
        assert t is not None, "a TPU pool needs its plan details"
        assert pool.zone is not None
        zone = pool.zone
        child = pulumi.ResourceOptions(parent=self)
        self.slice_names = {}
        for s in t.slices:
            if t.api == "queued-resource":
                qr = gcp.tpu.V2QueuedResource(
                    f"{name}-{s.name}",
                    zone=zone,
                    tpu=gcp.tpu.V2QueuedResourceTpuArgs(
                        node_specs=[
                            gcp.tpu.V2QueuedResourceTpuNodeSpecArgs(
                                parent=args["project"].apply(lambda p: f"projects/{p}/locations/{zone}"),
                                node_id=s.name,
                                node=gcp.tpu.V2QueuedResourceTpuNodeSpecNodeArgs(
                                    accelerator_type=t.accelerator_type,
                                    runtime_version=t.runtime_version,
                                    network_config=gcp.tpu.V2QueuedResourceTpuNodeSpecNodeNetworkConfigArgs(
                                        network=args["network_id"],
                                        subnetwork=args["subnet_id"],
                                        enable_external_ips=False,
                                    ),
                                ),
                            )
                        ]
                    ),
                    opts=child,
                )
                self.slice_names[s.name] = qr.name
            else:
                vm = gcp.tpu.V2Vm(
                    f"{name}-{s.name}",
                    name=s.name,
                    zone=zone,
                    accelerator_type=t.accelerator_type,
                    runtime_version=t.runtime_version,
                    network_config=gcp.tpu.V2VmNetworkConfigArgs(
                        network=args["network_id"], subnetwork=args["subnet_id"], enable_external_ips=False
                    ),
                    scheduling_config=gcp.tpu.V2VmSchedulingConfigArgs(spot=t.spot, reserved=t.reserved),
                    service_account=gcp.tpu.V2VmServiceAccountArgs(
                        email=args["service_account_email"],
                        scopes=["https://www.googleapis.com/auth/cloud-platform"],
                    ),
                    metadata={"enable-oslogin": "TRUE"},
                    opts=child,
                )
                self.slice_names[s.name] = vm.name
        self.register_outputs({"slice_names": self.slice_names})
