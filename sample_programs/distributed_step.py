"""One step of a multi-process JAX job: every process jits the same `step` on its own batches.

With `--diverge-at N`, the last process feeds a smaller batch at step N: it compiles a second
program that its peers never compile, the divergence `recompile-cli merge` reports. (No
collective runs here, so the job finishes; in a real job the next collective would hang.)

Two processes on one machine, over the loopback address:

    recompile-cli run --save reports/run-{process}.json sample_programs/distributed_step.py --coordinator 127.0.0.1:12345 --num-processes 2 --process-id 0 --diverge-at 2 &
    recompile-cli run --save reports/run-{process}.json sample_programs/distributed_step.py --coordinator 127.0.0.1:12345 --num-processes 2 --process-id 1 --diverge-at 2
    recompile-cli merge reports/run-*.json --fail-on-divergence

Under SLURM (jax.distributed finds the coordinator, count and index itself):

    srun recompile-cli run --save reports/run-{process}.json sample_programs/distributed_step.py
"""

import argparse

import jax
import jax.numpy as jnp

FEATURES = 8


@jax.jit
def step(params, batch):
    pred = batch["x"] @ params["w"]
    return jnp.mean((pred - batch["y"]) ** 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--coordinator", help="host:port of process 0 (default: from the "
                        "cluster environment)")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--diverge-at", type=int, default=None,
                        help="the last process feeds half a batch at this step (1-based)")
    args = parser.parse_args()
    jax.distributed.initialize(coordinator_address=args.coordinator,
                               num_processes=args.num_processes, process_id=args.process_id,
                               initialization_timeout=60)
    me, count = jax.process_index(), jax.process_count()
    params = {"w": jnp.zeros((FEATURES, 1))}
    for i in range(1, args.steps + 1):
        rows = args.batch // 2 if (i == args.diverge_at and me == count - 1) else args.batch
        batch = {"x": jnp.ones((rows, FEATURES)), "y": jnp.zeros((rows, 1))}
        loss = step(params, batch)
    print(f"process {me} of {count}: loss {float(loss):.3f}")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
