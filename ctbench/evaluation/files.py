"""Evaluation result files: written as CSV, ``.csv.gz`` or Parquet, read back with only the columns a reader needs
(issue 21: the report read 24 columns of 21.4M rows into 11.3 GB). Used by ``ctbench evaluate`` and the report."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import atomic_write_json, atomic_write_text


def float32_as_csv_float64(a: np.ndarray) -> np.ndarray:
    """``a.astype(str).astype(np.float64)`` (the float64 that a float32's shortest text reads back as), converting
    each distinct bit pattern once (issue 21: 250,000 probabilities of a synthetic evaluation hold ≈ 5,000 values;
    0.17 → 0.02 CPU-s). Distinct by bits, so −0.0 and 0.0, and NaN payloads, are kept apart as in the plain form."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits, inverse = np.unique(a.view(np.uint32), return_inverse=True)
    return bits.view(np.float32).astype(str).astype(np.float64)[inverse.reshape(a.shape)]


def write_frame(df: pd.DataFrame, out: str | Path) -> Path:
    """``out`` and its ``.json`` sidecar (``df.attrs["meta"]``), each atomically. ``out`` is CSV (``.csv``;
    ``.csv.gz`` compressed) or Parquet (``.parquet``: typed columns, the text columns dictionary-encoded, zstd; the
    report reads only the columns it needs from it, :func:`read_evaluations`)."""
    out = Path(out)
    if out.suffix == ".parquet":
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        from ..io import atomic_write_bytes

        # float32 columns (p_target) as the float64 that the CSV's shortest float32 text reads back as, so a Parquet
        # file and a CSV file of one frame give the same numbers
        f32 = [c for c in df.columns if df[c].dtype == np.float32]
        if f32:
            df = df.assign(**{c: float32_as_csv_float64(df[c].to_numpy()) for c in f32})
        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.replace_schema_metadata(None)
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd", use_dictionary=True)
        atomic_write_bytes(out, buf.getvalue())
    elif out.suffix == ".gz":
        import gzip

        from ..io import atomic_write_bytes

        atomic_write_bytes(out, gzip.compress(df.to_csv(index=False).encode(), compresslevel=1, mtime=0))
    else:
        atomic_write_text(out, df.to_csv(index=False))
    atomic_write_json(out.with_name(out.name + ".json"), df.attrs["meta"])
    return out


#: the columns of an evaluation file that the report's tables read (the others — model, individual, index, factual,
#: target, valid_strict, p_target, mature, steps, redundancy, seconds, ip_star_raw — are kept in the files for
#: inspection)
REPORT_COLUMNS = ("dataset", "experiment", "seed", "objective", "lambda_energy", "run", "valid", "cost", "ip",
                  "ip_star", "ip_star_run", "ip_star_pooled")
#: the text columns, held as categoricals by :func:`read_evaluations` with ``compact=True``
TEXT_COLUMNS = ("dataset", "experiment", "model", "objective")


def read_evaluation(path: str | Path, columns: Iterable[str] | None = None,
                    what: str = "evaluation file", header: list[str] | None = None) -> pd.DataFrame:
    """One evaluation file (``.parquet``, ``.csv`` or ``.csv.gz``), only ``columns`` (those present; default all).

    The values and dtypes are those of ``pd.read_csv`` of the CSV (float64, int64, bool, pandas' ``str``: with
    pyarrow installed its strings are Arrow-backed, a few bytes a row instead of one Python object each), so every
    table computed from the frame is the same (tested). A missing, truncated or unreadable file raises
    :class:`~ctbench.errors.BadFileError` naming it. ``header``, a list, receives every column name of the file.
    """
    from ..errors import BadFileError
    from ..io import read_csv_file

    p = Path(path)
    want = None if columns is None else list(dict.fromkeys(columns))
    names = [] if header is None else header
    if p.suffix == ".parquet":
        if not p.is_file():
            raise BadFileError(f"{what} {p} does not exist" if not p.exists() else f"{what} {p} is not a file")
        try:
            import pyarrow.parquet as pq

            schema = pq.read_schema(p)
            names.extend(schema.names)
            cols = None if want is None else [c for c in schema.names if c in want]  # file order, as CSV
            df = pq.read_table(p, columns=cols).to_pandas()
        except (OSError, ValueError) as err:  # pyarrow.ArrowInvalid is a ValueError
            detail = str(err).splitlines()[0] if str(err) else "no detail"
            raise BadFileError(f"{what} {p} ({p.stat().st_size} bytes) cannot be read ({type(err).__name__}: "
                               f"{detail}): it is truncated or not a Parquet file. Run the step that writes it "
                               "again.") from None
    else:
        usecols = None if want is None else (lambda c: names.append(c) is None and c in want)
        df = read_csv_file(p, what, usecols=usecols)
        if want is None:
            names.extend(df.columns)
    return df


def read_evaluations(paths: Iterable[str | Path], columns: Iterable[str] | None = REPORT_COLUMNS,
                     required: Iterable[str] = ("experiment", "dataset", "model"),
                     what: str = "evaluation file", experiments: Iterable[str] | None = None,
                     compact: bool = False) -> pd.DataFrame:
    """Concatenate evaluation files (:func:`read_evaluation`); an empty list gives an empty frame. A file without
    the ``required`` columns (in the file, read or not) raises :class:`~ctbench.errors.BadFileError` naming it.

    ``experiments``: only the rows of these experiments (each file is filtered as it is read). ``compact``: the text
    columns (:data:`TEXT_COLUMNS`) as categoricals with their values sorted as categories (one byte a row instead of
    an Arrow string's ~15); the values, the row order and every table computed from the frame stay the same (groupby
    with ``sort=False`` keeps the order of first appearance, ``sort=True`` the sorted order: tested on the report's
    tables). The report's memory at the paper's 21.4M rows (issue 21)."""
    from ..errors import BadFileError

    keep = None if experiments is None else set(experiments)
    frames = []
    for p in paths:
        header: list[str] = []
        df = read_evaluation(p, columns, what, header=header)
        missing = [c for c in required if c not in header]
        if missing:
            raise BadFileError(f"{what} {p} lacks the column(s) {missing}: it is not an output of the command that "
                               f"writes {what}s")
        if keep is not None and "experiment" in df:
            rows = df["experiment"].isin(keep).to_numpy()
            if not rows.all():
                df = df[rows].reset_index(drop=True)
            if df.empty:
                continue
        if compact:
            df = df.astype({c: "category" for c in TEXT_COLUMNS if c in df})
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    if compact:  # one categorical dtype per column (concatenating different ones would fall back to strings)
        from pandas.api.types import CategoricalDtype

        for c in TEXT_COLUMNS:
            if c in frames[0]:
                cats = sorted(set().union(*(f[c].cat.categories for f in frames if c in f)))
                dtype = CategoricalDtype(cats)
                frames = [f.astype({c: dtype}) if c in f else f for f in frames]
    return pd.concat(frames, ignore_index=True)
