"""Benchmark of nbagent.spark.run_batch on local[2] against a local Batch of the same tasks, in one run.

``--tasks`` (10,000) replay tasks, each one tool call and an answer (two model calls, the tool, every
row recorded), written to a dataset folder both ways (``output=``, as a Spark job always writes):

* **local**: ``Batch(make_agent, tasks, concurrency=16, output=folder, progress=None)`` in this process;
* **spark**: ``nbagent.spark.run_batch(frame, make_agent, output=folder, concurrency=16)`` on a local-mode
  session ``local[2]`` (two executor threads, each partition's Batch in a Python worker of its own), the
  tasks in ``--partitions`` (4) partitions; timed from the call to the returned DataFrame counted (the job,
  then its rows read back), the session already started and its Python workers warm (a first small job
  starts them: each imports nbagent once; its seconds and the session's start are given apart).

The figures: each side's wall seconds and tasks per second, and spark / local. On one machine Spark cannot
be faster than a process that has both cores to itself unless the work is CPU bound in Python (here a
replay model: the loop, the trace and the writes are the work, so two Python workers use both cores where
one process uses one); what the ratio says is what the distribution costs on top of the Batch it runs.

    python bench/bench_spark.py [--tasks 10000] [--partitions 4] [--concurrency 16] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def make_agent(row: Any) -> Any:
    """The replay weather agent for a task (a dict from Spark, a pandas row from a local Batch)."""
    from nbagent import AssistantAgent, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient

    def lookup(city: str) -> str:
        """The weather of a city."""
        return f"sunny in {city}"

    city = str(row["task"])
    call = FunctionCall(id="c1", name="lookup", arguments=json.dumps({"city": city}))
    script = [CreateResult(finish_reason="function_calls", content=[call]), f"It is sunny in {city}."]
    client = ReplayChatCompletionClient(script)
    return AssistantAgent("weather", client, tools=[FunctionTool(lookup)], reflect_on_tool_use=True)


def session(master: str, scratch: Path) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    spark = (
        SparkSession.builder.master(master)
        .appName("nbagent-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", str(scratch / "local"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import warnings

    import pandas as pd

    from nbagent import Batch
    from nbagent.spark import run_batch

    warnings.filterwarnings("ignore", category=FutureWarning)
    scratch = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    tasks = pd.DataFrame({"task_id": range(args.tasks), "task": [f"city {i}" for i in range(args.tasks)]})
    figures: dict[str, Any] = {"tasks": args.tasks, "partitions": args.partitions, "concurrency": args.concurrency}
    figures["load_start"] = os.getloadavg()
    try:
        started = time.perf_counter()
        spark = session("local[2]", scratch)
        figures["spark_start_s"] = time.perf_counter() - started
        frame = spark.createDataFrame(tasks).repartition(args.partitions).cache()
        frame.count()
        started = time.perf_counter()  # the executors' Python workers start and import nbagent once
        run_batch(frame.limit(args.partitions * 4), make_agent, scratch / "warm-up").count()
        figures["warm_up_s"] = time.perf_counter() - started

        started = time.perf_counter()
        batch = Batch(
            make_agent, tasks, key="task_id", concurrency=args.concurrency, output=scratch / "local", progress=None
        ).run_sync()
        figures["local_s"] = time.perf_counter() - started
        local_ok = int((batch.results["status"] == "ok").sum())

        started = time.perf_counter()
        rows = run_batch(frame, make_agent, scratch / "spark", concurrency=args.concurrency)
        spark_ok = rows.where("status = 'ok'").count()
        figures["spark_s"] = time.perf_counter() - started
        spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if local_ok != args.tasks or spark_ok != args.tasks:
        raise SystemExit(f"not every task ended ok: local {local_ok}, spark {spark_ok} of {args.tasks}")
    figures["load_end"] = os.getloadavg()
    figures["local_tasks_per_s"] = args.tasks / figures["local_s"]
    figures["spark_tasks_per_s"] = args.tasks / figures["spark_s"]
    figures["spark_over_local"] = figures["spark_s"] / figures["local_s"]
    print(
        f"{args.tasks:,} replay tasks, concurrency {args.concurrency}: local Batch {figures['local_s']:.1f} s "
        f"({figures['local_tasks_per_s']:.0f}/s); run_batch on local[2], {args.partitions} partitions "
        f"{figures['spark_s']:.1f} s ({figures['spark_tasks_per_s']:.0f}/s); spark / local "
        f"{figures['spark_over_local']:.2f} (apart: session start {figures['spark_start_s']:.1f} s, warm-up job "
        f"{figures['warm_up_s']:.1f} s; load "
        f"{figures['load_start'][0]:.1f} -> {figures['load_end'][0]:.1f})"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
