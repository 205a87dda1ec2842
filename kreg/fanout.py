"""`kreg submit --ray [ADDRESS]`: the verify pipeline of each candidate as a Ray task on an existing
cluster (or a local instance), results back to the submitting process, which alone decides, writes the
store and enters accepted variants. A task gets the candidate as data (its staged YAML and source
bytes), stages it on the worker, checks that it hashes the same there, and runs kreg.pipeline exactly
as `kreg submit` does locally (each stage in a child with limits); GPU tasks ask Ray for a GPU. The
workers need the same kreg (version and checker) as the submitter: a report from another is refused."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kreg import __version__
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.pipeline import Options, verify_variant
from kreg.registry.catalog import Entry, variant_hash
from kreg.registry.results import VariantReport
from kreg.registry.schema import Op, load_op, load_variant


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be reached: an environment error."""


def verify_staged(op_bytes: bytes, yaml_name: str, yaml_bytes: bytes, source_name: str, source_bytes: bytes,
                  want_hash: str, device: str, opts: Options) -> dict:
    """The task body: stage the op contract and the candidate in a private folder, check the candidate's
    hash, run the pipeline; the report as plain JSON data plus the worker's versions."""
    with tempfile.TemporaryDirectory(prefix="kreg-task-") as tmp:
        (Path(tmp) / "op.yaml").write_bytes(op_bytes)
        (Path(tmp) / source_name).write_bytes(source_bytes)
        (Path(tmp) / yaml_name).write_bytes(yaml_bytes)
        op = load_op(Path(tmp) / "op.yaml")        # the submitter's contract (a user op too)
        v = load_variant(Path(tmp) / yaml_name, {op.name: op})
        got = variant_hash(v)
        versions = {"tool_version": __version__, "checker_version": CHECKER_VERSION, "host": os.uname().nodename}
        if got != want_hash:
            return versions | {"error": f"the candidate hashes to {got[:12]} on the worker, not {want_hash[:12]} "
                                        "(different kreg or headers there)"}
        r = verify_variant(Entry(v, got, "user"), op, device, opts)
        return versions | {"report": r.to_json()}


class RayRemote:
    """remote(entry, op, device, opts) for kreg.submit.submit: blocks on one Ray task (call it from several
    threads to keep several tasks in flight)."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--ray needs Ray: pip install 'kreg[ray]'") from None
        self.ray = ray
        why = _unreachable(address or os.environ.get("RAY_ADDRESS") or "")
        if why:
            raise RayUnavailable(f"cannot reach Ray at {address or os.environ['RAY_ADDRESS']}: {why}")
        try:
            if not ray.is_initialized():
                if address or os.environ.get("RAY_ADDRESS"):
                    ray.init(address=address or None, log_to_driver=False, logging_level="ERROR")
                else:          # a local instance, unless RAY_ADDRESS names a cluster
                    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                             logging_level="ERROR")
        except Exception as e:
            raise RayUnavailable(f"cannot reach Ray at {address or 'a local instance'}: {type(e).__name__}: {e}") from None
        self._task = ray.remote(max_retries=0)(verify_staged)

    def describe(self) -> str:
        res = self.ray.cluster_resources()
        return f"ray ({len(self.ray.nodes())} node(s), {res.get('CPU', 0):g} CPU, {res.get('GPU', 0):g} GPU)"

    def __call__(self, entry: Entry, op: Op, device: str, opts: Options) -> VariantReport:
        v = entry.variant
        need = {"num_gpus": 1} if device == "gpu" else {"num_cpus": 1}
        ref = self._task.options(**need).remote(Path(op.path).read_bytes(), Path(v.path).name,
                                                Path(v.path).read_bytes(), v.source_path.name,
                                                v.source_path.read_bytes(), entry.hash, device, opts)
        try:
            out = self.ray.get(ref)
        except Exception as e:       # the task died (its worker, the node): not a verdict on the kernel
            return _not_run(entry, f"the Ray task failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        if out.get("error"):
            return _not_run(entry, out["error"])
        if (out["tool_version"], out["checker_version"]) != (__version__, CHECKER_VERSION):
            return _not_run(entry, f"the worker on {out['host']} runs kreg {out['tool_version']} with checker "
                                   f"{out['checker_version']}, not {__version__} / {CHECKER_VERSION}")
        return VariantReport.from_json(out["report"])

    def slots(self, device: str) -> int:
        """Tasks the cluster can run at once for this device (its CPUs, or its GPUs)."""
        res = self.ray.cluster_resources()
        return max(1, int(res.get("GPU" if device == "gpu" else "CPU", 1)))

    def device_kind(self, device: str) -> str:
        """The device kind results are stored under, as a worker with the task's resources sees it."""
        from kreg.submit import device_kind
        need = {"num_gpus": 1} if device == "gpu" else {"num_cpus": 1}
        try:
            return self.ray.get(self.ray.remote(max_retries=0)(device_kind).options(**need).remote(device),
                                timeout=300)
        except Exception:
            return ""

    def close(self) -> None:
        self.ray.shutdown()


def _unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why host:port (or ray://host:port) takes no TCP connection, checked before ray.init, which would
    retry for minutes; None if it does or the address is not of that form ("auto", a local instance)."""
    import socket
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        return f"no connection ({e.strerror or type(e).__name__})"
    return None


def _not_run(entry: Entry, why: str) -> VariantReport:
    v = entry.variant
    return VariantReport(v.op, v.name, v.safety, entry.hash, dict(v.types), environment_error=why, verdict="error",
                         reasons=[f"environment: {why}"])
