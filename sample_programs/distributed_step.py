"""One training step of a multi-process JAX job: a global batch, one jitted step reducing over it.

Every process loads its own rows; ``jax.make_array_from_process_local_data`` makes them one
global batch sharded over the processes, and ``step`` averages over all of it (a collective:
gloo on CPU). With ``--diverge-at N`` the last process feeds half a batch at step N: it infers a
smaller global batch and compiles a second program that its peers never compile. Unchecked, the
job goes on and every process prints a different, wrong loss (or, with other programs, hangs in
the collective); ``recompile-cli merge`` finds the divergence after the job, and ``recompile-cli
run --check-hosts`` stops every process at the compile, before the step runs.

Two processes on one machine, over the loopback address:

    recompile-cli run --check-hosts --save reports/run-{process}.json sample_programs/distributed_step.py --coordinator 127.0.0.1:12345 --num-processes 2 --process-id 0 --diverge-at 2 &
    recompile-cli run --check-hosts --save reports/run-{process}.json sample_programs/distributed_step.py --coordinator 127.0.0.1:12345 --num-processes 2 --process-id 1 --diverge-at 2
    recompile-cli merge reports/run-*.json --fail-on-divergence

Under SLURM (jax.distributed finds the coordinator, count and index itself):

    srun recompile-cli run --save reports/run-{process}.json sample_programs/distributed_step.py

Without a coordinator or a cluster environment it runs as a single process.
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

FEATURES = 8


@jax.jit
def step(params, batch):
    pred = batch["x"] @ params["w"]
    return jnp.mean((pred - batch["y"]) ** 2)  # over the global batch: a collective


def start(args):
    """Join the job (CPU collectives over gloo); a single process without a coordinator."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address=args.coordinator,
                                   num_processes=args.num_processes,
                                   process_id=args.process_id, initialization_timeout=60)
    except (ValueError, RuntimeError):
        if args.coordinator:
            raise
        return False  # no coordinator and no cluster environment
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--coordinator", help="host:port of process 0 (default: from the "
                        "cluster environment)")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="rows per process")
    parser.add_argument("--diverge-at", type=int, default=None,
                        help="the last process feeds half a batch at this step (1-based)")
    parser.add_argument("--leave-shutdown-to-jax", action="store_true",
                        help="do not call jax.distributed.shutdown(): JAX's exit handler does")
    args = parser.parse_args()
    joined = start(args)
    me, count = jax.process_index(), jax.process_count()
    mesh = (jax.make_mesh((jax.device_count(),), ("batch",)) if hasattr(jax, "make_mesh")
            else Mesh(np.array(jax.devices()), ("batch",)))  # JAX < 0.4.35
    rows_sharded = NamedSharding(mesh, PartitionSpec("batch"))
    params = {"w": np.zeros((FEATURES, 1), np.float32)}
    for i in range(1, args.steps + 1):
        rows = args.batch // 2 if (i == args.diverge_at and me == count - 1) else args.batch
        local = {"x": np.ones((rows, FEATURES), np.float32),
                 "y": np.full((rows, 1), me + i, np.float32)}
        batch = {k: jax.make_array_from_process_local_data(rows_sharded, v)
                 for k, v in local.items()}
        loss = step(params, batch)
        print(f"process {me} of {count}: step {i} loss {float(loss):.3f}", flush=True)
    if joined and not args.leave_shutdown_to_jax:
        jax.distributed.shutdown()


if __name__ == "__main__":
    main()
