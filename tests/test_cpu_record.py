"""A job's own CPU record (ctbench.cpu_record) and ``ctbench stage-times`` preferring it to Snakemake's benchmark
record, which samples and under-counts (issue 21)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctbench.cpu_record import main, read, record_path
from ctbench.report.tables.stage_times import stage_times

ROOT = Path(__file__).resolve().parent.parent
#: a child that burns ~0.4 CPU-s in a grandchild it waits for, touches 120 MB itself, and exits with argv[1]
CHILD = ("import subprocess, sys, time\n"
         "subprocess.run([sys.executable, '-c', 'import time\\nt=time.process_time()\\n"
         "while time.process_time()-t<0.4: pass'], check=True)\n"
         "b = bytearray(120 * 2**20)\n"
         "sys.exit(int(sys.argv[1]))\n")


def test_record_counts_the_command_and_its_children(tmp_path):
    rec = tmp_path / "evaluate" / "single_mnist_s0.cpu.json"
    assert main([str(rec), sys.executable, "-c", CHILD, "0"]) == 0
    values = read(rec)
    assert values["cpu_seconds"] >= 0.35  # the grandchild's loop, waited for by the child
    assert values["cpu_seconds"] == pytest.approx(values["user_seconds"] + values["system_seconds"], abs=0.002)
    assert values["max_rss_mb"] >= 120
    assert values["wall_seconds"] >= values["cpu_seconds"] * 0.5


def test_failed_command_keeps_its_exit_code_and_no_usable_record(tmp_path):
    rec = tmp_path / "x.cpu.json"
    assert main([str(rec), "--", sys.executable, "-c", CHILD, "3"]) == 3
    assert json.loads(rec.read_text())["exit_code"] == 3
    assert read(rec) is None  # stage-times falls back to Snakemake's record


def test_a_stale_record_is_removed_before_the_command_runs(tmp_path, capsys):
    rec = tmp_path / "x.cpu.json"
    rec.write_text(json.dumps({"cpu_seconds": 1.0}))
    assert main([str(rec), str(tmp_path / "no-such-command")]) == 127
    assert not rec.exists()
    assert "no-such-command" in capsys.readouterr().err


def test_module_runs_as_a_program(tmp_path):
    rec = tmp_path / "x.cpu.json"
    p = subprocess.run([sys.executable, "-m", "ctbench.cpu_record", str(rec), sys.executable, "-c", "print('hi')"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and p.stdout == "hi\n"  # the command's output passes through untouched
    assert read(rec)["exit_code"] == 0


def _snakemake_record(path: Path, wall: float, cpu: float, rss: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                    f"{wall}\t0:00:{int(wall):02d}\t{rss}\t1.0\t1.0\t1.0\t0.00\t0.00\t50.0\t{cpu}\n")
    return path


def _own_record(tsv: Path, wall: float, cpu: float, rss: float, code: int = 0) -> None:
    record_path(tsv).write_text(json.dumps({"user_seconds": cpu - 1, "system_seconds": 1.0, "cpu_seconds": cpu,
                                            "wall_seconds": wall, "max_rss_mb": rss, "exit_code": code}))


def test_stage_times_prefer_own_records(tmp_path):
    a = _snakemake_record(tmp_path / "evaluate" / "a.tsv", 40.0, 12.0, 600.0)
    _own_record(a, 39.6, 30.5, 650.0)  # the same run: walls agree
    _snakemake_record(tmp_path / "evaluate" / "b.tsv", 20.0, 8.0, 500.0)  # no own record
    c = _snakemake_record(tmp_path / "evaluate" / "c.tsv", 20.0, 9.0, 500.0)
    _own_record(c, 100.0, 90.0, 900.0)  # another run's record (walls disagree): not used
    d = _snakemake_record(tmp_path / "data" / "d.tsv", 5.0, 2.0, 300.0)
    _own_record(d, 5.0, 4.0, 310.0, code=1)  # a failed run's record: not used
    e = _snakemake_record(tmp_path / "evaluate" / "e.tsv", 30.0, 3.0, 400.0)
    _own_record(e, 12.0, 10.0, 420.0)  # the same run on a starved machine: the shell took 18 s of Snakemake's wall
    f = _snakemake_record(tmp_path / "evaluate" / "f.tsv", 30.0, 3.0, 400.0)
    _own_record(f, 25.0, 20.0, 420.0)
    t = f.stat().st_mtime
    os.utime(record_path(f), (t - 3600, t - 3600))  # written an hour before the job ended: an earlier run's
    st = stage_times(tmp_path).set_index("stage")
    assert st.loc["evaluate", "cpu_seconds"] == pytest.approx(30.5 + 8.0 + 9.0 + 10.0 + 3.0)
    assert st.loc["evaluate", "own_records"] == 2 and st.loc["evaluate", "jobs"] == 5
    assert st.loc["evaluate", "max_rss_mb"] == pytest.approx(650.0)
    assert st.loc["evaluate", "wall_seconds"] == pytest.approx(140.0)  # Snakemake's walls, always
    assert st.loc["data", "cpu_seconds"] == pytest.approx(2.0) and st.loc["data", "own_records"] == 0
    assert st.loc["total", "own_records"] == 2 and st.loc["total", "cpu_seconds"] == pytest.approx(62.5)


def test_stage_times_of_snakemake_records_only_are_unchanged(tmp_path):
    _snakemake_record(tmp_path / "report" / "report.tsv", 228.37, 204.79, 2260.0)
    st = stage_times(tmp_path)
    assert list(st.columns) == ["stage", "jobs", "wall_seconds", "cpu_seconds", "max_rss_mb", "own_records"]
    assert st.iloc[0].to_dict() == {"stage": "report", "jobs": 1, "wall_seconds": 228.37, "cpu_seconds": 204.79,
                                    "max_rss_mb": 2260.0, "own_records": 0}
    assert stage_times(tmp_path / "none").empty


def _rule_blocks() -> dict[str, str]:
    blocks = {}
    for f in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        parts = re.split(r"^\s*rule (\w+):\n", f.read_text(), flags=re.M)
        blocks.update(dict(zip(parts[1::2], parts[2::2], strict=True)))
    return blocks


def test_rules_write_the_record_beside_their_benchmark_record():
    """Each rule that counts its own CPU writes the record its benchmark record's name says (``X.tsv`` →
    ``X.cpu.json``) with the command it runs; the rules whose command code a regeneration does not change keep
    Snakemake's record only (wrapping them would rerun them)."""
    blocks = _rule_blocks()
    wrapped = set()
    for name, text in blocks.items():
        cpu = re.search(r'^\s*cpu=f"(.+)",$', text, flags=re.M)
        if not cpu:
            assert "{CPU_RECORD}" not in text, name
            continue
        wrapped.add(name)
        bench = re.search(r'benchmark:\n\s*f"(.+)"\n', text).group(1)
        assert str(record_path(bench)) == cpu.group(1), name
        shell = "".join(re.findall(r'^\s*"(.*)"$', text.split("shell:")[1], flags=re.M))
        # OMP_NUM_THREADS at the job's threads, or at params.threads where the job's threads go to row chunks
        assert re.match(r"^(OMP_NUM_THREADS=\{(params\.)?threads\} )?\{CPU_RECORD\} \{params\.cpu:q\} ctbench ",
                        shell), name
    assert {"train_final", "evaluate", "robustness", "attribution", "grid_chunk", "consistency", "fidelity_effect",
            "lenet_train", "report", "book"} <= wrapped
    assert wrapped.isdisjoint({"data", "figure1", "black_figure1", "black_figure2", "stage_times"})
