"""Runs the shards of an npusim sweep as the tasks of one HyperQueue job (scripts/hq-sweep).

    python hq-sweep.py NPUSIM SWEEP.yaml SHARDS WORK_DIR

Starts a HyperQueue server and one worker on this machine (LocalCluster), submits SHARDS tasks
`NPUSIM sweep SWEEP.yaml --shards SHARDS -j 1 -o WORK_DIR/parts/part-K.csv` (task K gets
HQ_TASK_ID=K, from which npusim takes its shard), waits for them and stops the cluster. A task
that fails fails the job (an exception naming it), and this script exits non-zero.
"""

import multiprocessing
import sys
from pathlib import Path

from hyperqueue import Job, LocalCluster
from hyperqueue.cluster import WorkerConfig


def main() -> None:
    npusim, sweep, shards, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    job = Job(name="npusim-sweep", max_fails=0)
    for k in range(shards):
        # the shard's index is HQ_TASK_ID (task ids of the Python API count from 0); the file
        # name only keeps the parts apart
        job.program(
            [npusim, "sweep", sweep, "--shards", str(shards), "-j", "1",
             "-o", str(work / "parts" / f"part-{k}.csv")],
            stdout=str(work / f"task-{k}.out"),
            stderr=str(work / f"task-{k}.err"),
        )
    with LocalCluster(server_dir=str(work / "server")) as cluster:
        # one worker with every core: as many shards run at once as there are cores
        cluster.start_worker(WorkerConfig(cores=multiprocessing.cpu_count()))
        client = cluster.client()
        submitted = client.submit(job)
        client.wait_for_jobs([submitted])
    print(f"hq-sweep: {shards} HyperQueue tasks finished", flush=True)


if __name__ == "__main__":
    main()
