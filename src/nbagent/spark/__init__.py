"""A :class:`~nbagent.Batch` on Spark: each partition of a tasks DataFrame runs nbagent's Batch on its
executor, into one dataset folder, resumed exactly (needs ``pip install "nbagent-loop[spark]"`` and Java).

::

    from nbagent.spark import run_batch
    results = run_batch(tasks, make_agent, output="/shared/evals", concurrency=16, timeout=120,
                        requests_per_second=50)          # a Spark DataFrame, one row per task
    spark.read.parquet("/shared/evals/tool_calls")        # the trace's tables, as any engine reads them
    nbagent.load_parquet("/shared/evals", lazy=True)      # nbagent's explorer, replay, compare...

**tasks**: a Spark DataFrame with a ``task_id`` column (string or integer: the task's key, unique) and a
``task`` column (string); its other columns go to the factory. **agent_factory**: a picklable function
given a task's row as a dict (``{"task_id": ..., "task": ..., ...}``) that returns a fresh
:class:`~nbagent.AssistantAgent`; it runs on the executors (build the model client inside it).

**How it runs.** Each partition is one :class:`~nbagent.Batch` (the same code as on one machine: its
``concurrency``, ``timeout``, ``retries`` and ``backoff`` per executor task) writing into ``output``, a
folder every executor and the driver reach (a local disk in local mode; a shared file system with POSIX
renames and locks on a cluster, such as NFS: object-store mounts have neither). Each attempt of a
partition is a session of its own in the dataset (``spark-<job>-p<partition>-a<attempt>-<random>``),
which commits its parts whole (:class:`~nbagent.trace.dataset.Dataset`: every file, then ``results``
last). The call runs the job, then returns the rows read back from the dataset's ``results`` table:
:data:`RESULT_SCHEMA`.

**Exactly once.** A partition whose executor dies (or raises) is retried by Spark: the retry opens the
dataset, which finishes or removes the parts the dead attempt left unfinished (a part another attempt is
still writing is left alone: its writer holds a lock), then skips every task an earlier attempt of the
same partition committed (whatever its status) and runs the others. A task is thus in exactly one
committed part of a job: once in every table. Spark's speculative execution (two attempts of a
partition at once) is refused. A second call with the same ``output`` runs only the tasks not committed
``ok`` by an earlier call (each partition's Batch skips them; its returned rows are those earlier ones).
Partitions must be deterministic (the same tasks when Spark computes a partition again), as for any
Spark job that writes.

**A job-wide limit.** ``requests_per_second`` and/or ``max_in_flight`` bound the job's model requests
across every executor (:mod:`nbagent.spark.limit`: a server on the driver that executors ask before each
request), not per executor: 1,000 partitions do not multiply a server's rate limit.

The loop layer, beside :mod:`nbagent.batch`; pyspark is imported only when called.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _check as check
from ..agent import AssistantAgent
from ..batch import OWN_TABLES, Batch
from ..experiment.folder import TABLE as EXPERIMENT_TABLE
from ..models.limit import REQUEST_LIMIT
from ..trace.dataset import Dataset
from .limit import JobLimit, LimitAddress, LimitClient, LimitUnreachable

if TYPE_CHECKING:
    import pandas as pd

    from ..experiment import Experiment

__all__ = ["RESULT_SCHEMA", "LimitUnreachable", "run_batch", "run_experiment"]

WHERE = "nbagent.spark.run_batch"
KEY = "_nbagent_task_key"
"""The column of the task's key (its ``task_id`` as a string) the executors' Batches are given."""

RESULT_SCHEMA = (
    "run_id string, status string, output string, error string, stop_reason string, prompt_tokens bigint, "
    "completion_tokens bigint, llm_calls bigint, tool_calls bigint, attempts bigint, duration_s double, "
    "started_at timestamp, ended_at timestamp, session string"
)
"""The columns :func:`run_batch` returns after ``task_id`` (of the input's type), as a Spark DDL schema:
the Batch's result columns (:data:`nbagent.batch.RESULT_COLUMNS`; ``output`` is its ``answer``)."""

STORED_SCHEMA = (
    "task string, status string, answer string, error string, stop_reason string, prompt_tokens bigint, "
    "completion_tokens bigint, llm_calls bigint, tool_calls bigint, duration_s double, started_at timestamp, "
    "ended_at timestamp, run_id string, attempts bigint, task_key string, task_index bigint, session string"
)
"""The dataset's ``results`` table as Spark reads it (its files, and the ``session`` partition column)."""

STATS_SCHEMA = "partition int, ran long, skipped long"


def _pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError as error:
        raise ImportError(
            f'{WHERE} needs pyspark (and Java): pip install "nbagent-loop[spark]"', name="pyspark"
        ) from error
    return pyspark.sql


@dataclass(frozen=True)
class _Job:
    """What each partition is given (pickled with the job): where to write, its sessions' prefix, the
    job's limit, and what runs its tasks."""

    output: str
    prefix: str
    work: _BatchWork | _ExperimentWork
    limit: LimitAddress | None


@dataclass(frozen=True)
class _BatchWork:
    """run_batch's partition: a Batch of the factory's agents over its rows."""

    factory: Callable[[dict[str, Any]], AssistantAgent]
    columns: tuple[str, ...]
    options: Mapping[str, Any]
    tables: tuple[str, ...] = OWN_TABLES

    async def run(self, todo: pd.DataFrame, output: Path, session: str, title: str) -> Batch:
        batch = Batch(
            _Factory(self.factory, self.columns),
            todo.reset_index(drop=True),
            key=KEY,
            output=output,
            session=session,
            progress=None,
            title=title,
            **self.options,
        )
        return await batch.run()


@dataclass(frozen=True)
class _ExperimentWork:
    """run_experiment's partition: the experiment built again on the executor, its runs of the partition's
    keys run (:meth:`~nbagent.Experiment.run_part`)."""

    tasks: pd.DataFrame
    variants: Mapping[str, Any]
    scorers: tuple[Any, ...]
    repeats: int
    options: Mapping[str, Any]
    tables: tuple[str, ...] = ("attempts", EXPERIMENT_TABLE, "results")

    async def run(self, todo: pd.DataFrame, output: Path, session: str, title: str) -> Batch:
        from ..experiment import Experiment

        exp = Experiment(
            self.tasks, self.variants, self.scorers, repeats=self.repeats, output=output, progress=None, **self.options
        )
        return await exp.run_part(todo[KEY].tolist(), session)


def run_batch(
    tasks: Any,
    agent_factory: Callable[[dict[str, Any]], AssistantAgent],
    output: str | PathLike[str],
    *,
    concurrency: int = 16,
    timeout: float | None = 60.0,
    retries: int = 3,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    part_size: int = 1000,
    requests_per_second: float | None = None,
    max_in_flight: int | None = None,
    limit_port: int = 0,
) -> Any:
    """Run ``agent_factory``'s agent on every task of ``tasks`` (a Spark DataFrame with ``task_id`` and
    ``task``), each partition a :class:`~nbagent.Batch` on its executor writing into the dataset folder
    ``output``; returns a Spark DataFrame of one row per task: ``task_id``, then :data:`RESULT_SCHEMA`.

    ``concurrency``, ``timeout``, ``retries``, ``backoff``, ``max_backoff`` and ``part_size`` are each
    partition's Batch's. ``requests_per_second`` / ``max_in_flight``: a limit on the whole job's model
    requests (a server on the driver, on ``spark.driver.host`` and ``limit_port``, 0: any free port).
    See the module's documentation.
    """
    sql = _pyspark()
    if not isinstance(tasks, sql.DataFrame):
        raise check.wrong_type(WHERE, "tasks", "a Spark DataFrame with the columns task_id and task", tasks)
    id_type = _check_columns(tasks)
    check.function(WHERE, "agent_factory", agent_factory, "a function (the task's row as a dict -> AssistantAgent)")
    _check_picklable(agent_factory)
    if not isinstance(output, (str, PathLike)):
        raise check.wrong_type(WHERE, "output", "a folder (a str or a path) every executor reaches", output)
    if "://" in str(output):
        raise check.wrong_value(
            WHERE,
            "output",
            "a folder path every executor reaches (a local or mounted file system), not a URL",
            str(output),
            "mount the storage (NFS...) and give its path: the dataset needs POSIX renames and locks",
        )
    folder = Path(output).absolute()
    options: dict[str, Any] = {
        "concurrency": concurrency,
        "timeout": timeout,
        "retries": retries,
        "backoff": backoff,
        "max_backoff": max_backoff,
        "part_size": part_size,
    }
    Batch(agent_factory, [], progress=None, **options)  # the options checked as each partition's Batch checks them
    rate = check.number(WHERE, "requests_per_second", requests_per_second, positive=True, none=True)
    in_flight = check.integer(WHERE, "max_in_flight", max_in_flight, minimum=1, none=True)
    port = _port(limit_port)
    spark = tasks.sparkSession
    _check_speculation(spark, WHERE)
    _check_keys(tasks)
    folder.mkdir(parents=True, exist_ok=True)
    prefix = f"spark-{secrets.token_hex(6)}"
    work = _BatchWork(agent_factory, tuple(tasks.columns), options)
    keyed = tasks.withColumn(KEY, sql.functions.col("task_id").cast("string"))
    _run_job(keyed, _Job(str(folder), prefix, work, None), rate, in_flight, port)
    return _results(spark, folder, prefix, keyed, id_type)


def run_experiment(
    experiment: Experiment,
    spark: Any,
    *,
    partitions: int | None = None,
    requests_per_second: float | None = None,
    max_in_flight: int | None = None,
    limit_port: int = 0,
) -> Experiment:
    """Run ``experiment`` (an :class:`~nbagent.Experiment` with ``output=``) on Spark: its variant x task x
    repeat runs (the keys of its one Batch) in ``partitions`` partitions (default: the session's default
    parallelism), each run on an executor by the experiment built again there
    (:meth:`~nbagent.Experiment.run_part`: the same agents, scorers, concurrency, timeout, retries) into
    its folder, resumed and retried exactly as :func:`run_batch`'s. Returns ``experiment``, whose
    ``results``, ``summary()`` and ``compare()`` read the folder (as :func:`~nbagent.load_experiment` does).
    Its variants and scorers are sent to the executors: functions that can be pickled (an agent variant
    cannot: give a function that builds it). An LLM judge keeps a cache per executor, merged into the
    folder's as each partition ends (two partitions ending at once may each miss the other's new entries:
    those answers are judged again by a later run, never wrong)."""
    from ..experiment import Experiment
    from ..experiment.folder import grid_frame

    sql = _pyspark()
    where = "nbagent.spark.run_experiment"
    check.instance(where, "experiment", experiment, Experiment, "an nbagent.Experiment")
    if experiment.output is None or experiment.batch is None:
        raise check.wrong_value(
            where,
            "experiment",
            "an Experiment built with output= (its folder is where the executors write)",
            experiment,
            "Experiment(tasks, variants, scorers, output='shared/folder')",
        )
    if not isinstance(spark, sql.SparkSession):
        raise check.wrong_type(where, "spark", "a SparkSession", spark)
    count = check.integer(where, "partitions", partitions, minimum=1, none=True)
    rate = check.number(where, "requests_per_second", requests_per_second, positive=True, none=True)
    in_flight = check.integer(where, "max_in_flight", max_in_flight, minimum=1, none=True)
    port = _port(limit_port)
    _check_speculation(spark, where)
    for name, variant in experiment.variants.items():
        _check_picklable(variant, where, f"variants[{name!r}]")
    for name, scorer in experiment.scorers.items():
        _check_picklable(scorer, where, f"scorers ({name!r})")
    batch = experiment.batch
    options = {
        "concurrency": batch.concurrency,
        "timeout": batch.timeout,
        "retries": batch.retries,
        "part_size": batch.part_size,
    }
    names = list(experiment.variants)
    work = _ExperimentWork(
        experiment.tasks, dict(experiment.variants), tuple(experiment.scorers.values()), experiment.repeats, options
    )
    import pandas as pd

    keys = grid_frame(experiment.tasks["task_id"].tolist(), names, experiment.repeats)["task_key"]
    frame = spark.createDataFrame(pd.DataFrame({KEY: keys.tolist()}), f"{KEY} string")
    frame = frame.repartition(count or spark.sparkContext.defaultParallelism)
    job = _Job(str(experiment.output.absolute()), f"spark-{secrets.token_hex(6)}", work, None)
    _run_job(frame, job, rate, in_flight, port)
    return experiment


def _run_job(frame: Any, job: _Job, rate: float | None, in_flight: int | None, port: int) -> None:
    """Run every partition of ``frame`` (a job-wide limit on the driver for the job's length, if asked)."""
    limit = None
    if rate is not None or in_flight is not None:
        host = str(frame.sparkSession.conf.get("spark.driver.host", "127.0.0.1"))
        limit = JobLimit(rate, in_flight, host, port)
        job = replace(job, limit=limit.address)
    try:
        # count(), not collect(): its answer comes back through Py4J, where collect()'s rows would come through
        # a socket of its own, open for one connection
        frame.mapInPandas(partial(_run_partition, job), STATS_SCHEMA).count()
    finally:
        if limit is not None:
            limit.close()


def _check_columns(tasks: Any) -> Any:
    """The type of ``task_id``; a clear error for a missing column or one of another type."""
    types = {field.name: field.dataType for field in tasks.schema.fields}
    for name in ("task_id", "task"):
        if name not in types:
            raise ValueError(
                f"{WHERE}: tasks has no {name!r} column (its columns: {', '.join(types) or 'none'}); "
                "rename one: tasks.withColumnRenamed('id', 'task_id')"
            )
    kind = types["task_id"].typeName()
    if kind not in ("string", "integer", "long", "short", "byte"):
        raise TypeError(f"{WHERE}: tasks' task_id column must be of type string or an integer, not {kind}")
    if types["task"].typeName() != "string":
        raise TypeError(f"{WHERE}: tasks' task column must be of type string, not {types['task'].typeName()}")
    return types["task_id"]


def _check_picklable(value: object, where: str = WHERE, param: str = "agent_factory") -> None:
    from pyspark import cloudpickle

    try:
        cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
    except Exception as error:
        raise TypeError(
            f"{where}: {param} cannot be pickled, so Spark cannot send it to the executors "
            f"({type(error).__name__}: {error}); make it a function that builds its agent, model client and "
            "tools inside (an open client, a lock or a connection in its closure cannot be pickled)"
        ) from error


def _check_speculation(spark: Any, where: str) -> None:
    if str(spark.conf.get("spark.speculation", "false")).lower() == "true":
        raise ValueError(
            f"{where}: spark.speculation is on: two attempts of a partition would run its tasks at once and "
            "both commit them; set spark.speculation=false for this job"
        )


def _check_keys(tasks: Any) -> None:
    """A null or repeated ``task_id`` is refused (one distributed count; a few of them are named). The count
    comes back through Py4J; only a refusal collects rows, through the JVM's one-connection result socket."""
    functions = _pyspark().functions
    col = functions.col
    repeated = tasks.groupBy("task_id").count().where((col("count") > 1) | col("task_id").isNull())
    if repeated.count():
        bad = repeated.limit(3).collect()
        named = ", ".join(f"{row['task_id']!r} ({row['count']} rows)" for row in bad)
        raise ValueError(f"{WHERE}: tasks' task_id must be unique and not null (a task's key): {named}")


def _port(value: object) -> int:
    port = check.integer(WHERE, "limit_port", value, minimum=0, maximum=65535)
    assert port is not None
    return port


def _results(spark: Any, folder: Path, prefix: str, keyed: Any, id_type: Any) -> Any:
    """This job's rows and, for the tasks an earlier call committed ok (skipped), those rows: read back."""
    functions = _pyspark().functions
    col = functions.col
    if not (folder / "results").is_dir():  # no task at all
        return spark.createDataFrame([], f"task_id {id_type.simpleString()}, {RESULT_SCHEMA}")
    stored = spark.read.schema(STORED_SCHEMA).parquet(str(folder / "results"))
    ours = col("session").startswith(prefix + "-")
    mine = stored.where(ours)
    earlier = stored.where(~ours & (col("status") == "ok")).dropDuplicates(["task_key"])
    asked = keyed.select(col(KEY).alias("task_key"))
    skipped = earlier.join(asked, "task_key", "left_semi").join(mine.select("task_key"), "task_key", "left_anti")
    rows = mine.unionByName(skipped)
    return rows.select(
        col("task_key").cast(id_type).alias("task_id"),
        *(col("answer").alias("output") if name == "output" else col(name) for name in _result_names()),
    )


def _result_names() -> list[str]:
    return [field.split()[0] for field in RESULT_SCHEMA.split(", ")]


# ---------------------------------------------------------------------- on the executors


def _run_partition(job: _Job, frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """One partition's tasks run as one Batch into the dataset; yields one row: how many ran and skipped."""
    import pandas as pd
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    pieces = list(frames)
    frame = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame({KEY: []})
    mine = f"{job.prefix}-p{partition:05d}"
    session = f"{mine}-a{attempt}-{secrets.token_hex(3)}"
    output = Path(job.output)
    dataset = Dataset(output, session, job.work.tables)  # opening it finishes or removes what a killed attempt left
    todo = frame[~frame[KEY].isin(dataset.keys_of(mine + "-"))]  # what the earlier attempts committed
    skipped = 0
    if len(todo):
        title = f"partition {partition} (attempt {attempt})"
        batch = asyncio.run(_run(job.work.run(todo, output, session, title), job.limit))
        skipped = batch.progress().skipped
    yield pd.DataFrame({"partition": [partition], "ran": [len(todo) - skipped], "skipped": [len(frame) - len(todo)]})


async def _run(work: Coroutine[Any, Any, Batch], limit: LimitAddress | None) -> Batch:
    if limit is not None:
        client = LimitClient(limit)
        try:
            await client.check()  # unreachable: the partition fails now, with why
        except BaseException:
            work.close()
            raise
        REQUEST_LIMIT.set(client)  # this run's context: every model request of the batch asks the driver
    return await work


class _Factory:
    """The Batch's ``make_agent``: the user's factory given the task's row as a dict of plain values
    (the input's columns only)."""

    def __init__(self, factory: Callable[[dict[str, Any]], AssistantAgent], columns: tuple[str, ...]) -> None:
        self.factory = factory
        self.columns = columns

    def __call__(self, row: pd.Series) -> AssistantAgent:
        return self.factory({name: _plain(row[name]) for name in self.columns})


def _plain(value: object) -> object:
    """A numpy scalar as the Python value (what a Spark Row gives)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", None) == 0 else value
