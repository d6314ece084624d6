"""`aicluster inventory --discover` at scale: the p5-small stack resized to N nodes, N tagged VMs in a local EC2 API
(moto's server) listed by the real amazon.aws.aws_ec2 plugin. Prints, per size, the wall time of a first discovery
(every VM named), of a second one after 1% of the VMs were replaced (names kept), the time `ansible-inventory`
itself took, and the time of the pure name assignment.

Needs the dev extras (boto3, moto[server]) and network access to PyPI once for the amazon.aws collection (cached
under .work/cache). Usage: python benchmarks/discover_scale.py [--sizes 64,512]
Prints figures; asserts nothing (timings belong in notes, not tests). moto's own speed is part of the wall time,
so compare runs of this script, not these figures with a real cloud's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aicluster import discover  # noqa: E402
from aicluster.preview import plan_stack  # noqa: E402
from aicluster.stackfile import find_project, read_stack  # noqa: E402
from tests.targets import ansible_collections  # noqa: E402

CLUSTER = "llm-dev"


def project(where: Path, nodes: int) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", where / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", where / "__main__.py")
    (where / "stacks").mkdir()
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text())
    cluster = doc["config"]["aicluster:cluster"]
    cluster["pools"][0]["nodes"] = nodes
    cluster["budgets"] = {}  # a resized stack is over the small one's budgets; discovery does not care
    (where / "stacks" / "Pulumi.bench.yaml").write_text(yaml.safe_dump(doc))
    return where


def launch(client: Any, count: int) -> list[str]:
    image = client.describe_images()["Images"][0]["ImageId"]
    tags = [{"Key": "aicluster:cluster", "Value": CLUSTER}, {"Key": "aicluster:pool", "Value": "h100"}]
    ids: list[str] = []
    while len(ids) < count:
        n = min(100, count - len(ids))
        r = client.run_instances(ImageId=image, MinCount=n, MaxCount=n, InstanceType="p5.48xlarge",
                                 TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])  # fmt: skip
        ids += [i["InstanceId"] for i in r["Instances"]]
    return ids


def run(where: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "inventory", "bench", "--discover"],
        cwd=where, capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200", **env},
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"discovery failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per API call otherwise

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="64,512", help="node counts (comma-separated)")
    args = parser.parse_args()
    collections = str(ansible_collections())
    print(f"{'nodes':>6} {'first':>9} {'replaced 1%':>12} {'ansible-inventory':>18} {'assign':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            url = f"http://{host}:{port}"
            keys = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
            env = {"AWS_URL": url, "ANSIBLE_COLLECTIONS_PATH": collections, **keys}
            client = boto3.client("ec2", endpoint_url=url, region_name="us-east-1",
                                  aws_access_key_id="bench", aws_secret_access_key="bench")  # fmt: skip
            ids = launch(client, size)
            with tempfile.TemporaryDirectory() as tmp:
                where = project(Path(tmp), size)
                first = run(where, env)
                gone = ids[:: max(1, size // max(1, size // 100))][: max(1, size // 100)]
                client.terminate_instances(InstanceIds=gone)
                launch(client, len(gone))
                second = run(where, env)
                stack = read_stack(find_project(where), "bench")
                plan = plan_stack(stack)
                configs = discover.plugin_configs(plan, stack.config)
                (where / "d").mkdir()
                for name, config in configs.items():
                    (where / "d" / name).write_text(yaml.safe_dump(config))
                old = dict(os.environ)
                os.environ.update(env)
                t = time.perf_counter()
                listing = discover.list_hosts(where / "d")
                listed = time.perf_counter() - t
                os.environ.clear()
                os.environ.update(old)
                found = discover.instances(listing)
                t = time.perf_counter()
                result = discover.assign(plan, found)
                assigned = time.perf_counter() - t
                assert len(result.nodes) == size, (len(result.nodes), size)
            print(f"{size:>6} {first:>8.2f}s {second:>11.2f}s {listed:>17.2f}s {assigned * 1000:>7.1f}ms")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
