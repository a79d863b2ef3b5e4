"""Bad files and ids are refused clearly: a Parquet part of another schema or with a column of another
type names the file and the column; a trace id that cannot name a folder is a ValueError before
anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nbagent import Trace, load_parquet

from .test_atomic_writes import two_runs


async def test_a_part_of_another_schema_is_refused_naming_file_and_column(tmp_path: Path) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    foreign = tmp_path / "runs" / "session=s1" / "part-1.parquet"
    pq.write_table(pa.table({"user": ["ann"], "score": [3.5]}), foreign)
    with pytest.raises(ValueError, match=r"part-1\.parquet: column 'user' is not a column of nbagent's 'runs'"):
        load_parquet(tmp_path)


async def test_a_column_of_another_type_is_refused_naming_file_and_column(tmp_path: Path) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    path = tmp_path / "runs" / "session=s1" / "part-0.parquet"
    table = pq.read_table(path)
    column = table.schema.get_field_index("duration_s")
    table = table.set_column(column, "duration_s", pa.array(["fast"] * table.num_rows))
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"part-0\.parquet: column 'duration_s' is string, where .* has double"):
        load_parquet(tmp_path)


async def test_a_file_that_is_not_parquet_is_refused_naming_it(tmp_path: Path) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    (tmp_path / "events" / "session=s1" / "part-0.parquet").write_bytes(b"PAR1 and then nothing")
    with pytest.raises(ValueError, match=r"events/session=s1/part-0\.parquet: not a readable Parquet file"):
        load_parquet(tmp_path, strict=True)
    with pytest.warns(UserWarning, match=r"events/session=s1/part-0\.parquet: not a readable Parquet file"):
        assert len(load_parquet(tmp_path).runs_df()) == 0  # the part skipped (issue 42.3)


async def test_a_column_added_since_a_file_was_written_still_reads_as_null(tmp_path: Path) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    path = tmp_path / "runs" / "session=s1" / "part-0.parquet"
    pq.write_table(pq.read_table(path).drop_columns(["handoff_target"]), path)
    assert load_parquet(tmp_path).runs_df()["handoff_target"].isna().all()


def test_a_long_trace_id_is_a_value_error_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most 200 characters, not 300"):
        Trace(trace_id="x" * 300).to_parquet(tmp_path / "out")
    with pytest.raises(ValueError, match="letters, digits"):
        Trace(trace_id="a b").to_parquet(tmp_path / "out")
    assert not (tmp_path / "out").exists()


async def test_a_foreign_file_among_a_batchs_results_is_refused_naming_it(tmp_path: Path) -> None:
    from nbagent import Batch
    from tests.batch.helpers import Factory

    batch = await Batch(Factory(), ["Oslo"], output=tmp_path, progress=None).run()
    foreign = tmp_path / "results" / f"session={batch.session}" / "part-7.parquet"
    pq.write_table(pa.table({"task": ["x"], "grade": ["A"]}), foreign)
    with pytest.raises(ValueError, match=r"part-7\.parquet: column 'grade' is not a column of nbagent's 'results'"):
        batch.results  # noqa: B018
