"""benchmarks/critical_path.py: each job of Snakemake's dot DAG gets its own benchmark record, although the dot
labels show only a job's new wildcards (a per-seed job's evaluations carry no seed in their labels)."""

import importlib.util
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("critical_path", ROOT / "benchmarks" / "critical_path.py")
cp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp)

# Snakemake's `--dag` of: data → one training job per seed → evaluate; two grid chunks (1 and 10) of one baseline; a
# consistency job; the report after all. Labels as Snakemake writes them (DAG.new_wildcards).
DOT = r"""digraph snakemake_dag {
	0[label = "report", color = "0 0 0", style="rounded"];
	1[label = "data\ndataset: mnist", color = "0 0 0", style="rounded"];
	2[label = "train_final_seed\nseed: 0", color = "0 0 0", style="rounded"];
	3[label = "train_final_seed\nseed: 1", color = "0 0 0", style="rounded"];
	4[label = "evaluate\nexperiment: single", color = "0 0 0", style="rounded"];
	5[label = "evaluate\nexperiment: single", color = "0 0 0", style="rounded"];
	6[label = "grid_baseline\ndataset: moons\ngrid: tune\nkey: bl\nseed: 0", color = "0 0 0", style="rounded"];
	7[label = "grid_chunk\nchunk: 1", color = "0 0 0", style="rounded"];
	8[label = "grid_chunk\nchunk: 10", color = "0 0 0", style="rounded"];
	9[label = "consistency\ndataset: epileptic_seizure\npart: black2022\nseed: 0", color = "0 0 0", style="rounded"];
	1 -> 2
	1 -> 3
	2 -> 4
	3 -> 5
	6 -> 7
	6 -> 8
	4 -> 0
	5 -> 0
	7 -> 0
	8 -> 0
	9 -> 0
}
"""


def _record(folder: Path, rule: str, name: str, cpu: float) -> None:
    (folder / rule).mkdir(parents=True, exist_ok=True)
    (folder / rule / f"{name}.tsv").write_text(f"s\tcpu_time\n{cpu + 1}\t{cpu}\n")


def test_each_job_gets_its_own_record(tmp_path):
    for rule, name, cpu in [("evaluate", "single_mnist_s0", 5.0), ("evaluate", "single_mnist_s1", 7.0),
                            ("grid_chunk", "tune_moons_bl_c10_s0", 30.0), ("grid_chunk", "tune_moons_bl_c1_s0", 20.0),
                            ("grid_chunk", "tune_lr_moons_bl_c1_s0", 99.0),
                            ("consistency_black2022", "epileptic_seizure_s0", 584.0), ("report", "report", 200.0)]:
        _record(tmp_path, rule, name, cpu)
    nodes, edges = cp.parse_dot(DOT)
    parents = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    inherited = cp.fill_wildcards(nodes, parents)
    assert nodes[4][1] == {"experiment": "single", "dataset": "mnist"} and inherited[4] == {"seed": "0"}
    assert inherited[0] == {}  # the report's ancestors disagree on everything
    times = cp.job_times(nodes, cp.read_records(tmp_path), {("train_final_seed", "mnist"): 127.0}, {}, 10.0,
                         inherited)
    assert times[4] == (5.0, "record") and times[5] == (7.0, "record")  # seed 0's and seed 1's evaluation
    assert times[7] == (20.0, "record") and times[8] == (30.0, "record")  # chunk 1 is not chunk 10, nor tune_lr's
    assert times[9] == (584.0, "record")  # consistency_<part>/ records count for the consistency rule
    assert times[2] == times[3] == (127.0, "override") and times[6] == (10.0, "default")
    length, chain, makespan, _ = cp.schedule(nodes, edges, {n: t for n, (t, _) in times.items()}, 34)
    assert [nodes[n][0] for n in chain] == ["consistency", "report"] and length == makespan == 784.0


def test_consistency_shard_jobs_and_their_records(tmp_path):
    """benchmarks/consistency_shards_dag.py adds Seizure's K shard jobs before its consistency job; each shard's
    record (`consistency_shard/{part}_{dataset}_k{shard}_n{n}_s{seed}`, the rule's) is its own (k1 is not k10)."""
    spec = importlib.util.spec_from_file_location("csd", ROOT / "benchmarks" / "consistency_shards_dag.py")
    csd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(csd)
    nodes, edges = cp.parse_dot(csd.add_shards(DOT, {"epileptic_seizure": 11}))
    shards = sorted(n for n, (rule, _) in nodes.items() if rule == "consistency_shard")
    assert len(shards) == 11 and {(s, 9) for s in shards} <= set(edges) and len(nodes) == 10 + 11
    for k, cpu in ((1, 100.0), (10, 120.0), *((k, 50.0) for k in (0, 2, 3, 4, 5, 6, 7, 8, 9))):
        _record(tmp_path, "consistency_shard", f"black2022_epileptic_seizure_k{k}_n11_s0", cpu)
    parents = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    times = cp.job_times(nodes, cp.read_records(tmp_path), {}, {}, 10.0, cp.fill_wildcards(nodes, parents))
    by_shard = {nodes[n][1]["shard"]: times[n] for n in shards}
    assert by_shard["1"] == (100.0, "record") and by_shard["10"] == (120.0, "record")
    length, chain, _, _ = cp.schedule(nodes, edges, {n: t for n, (t, _) in times.items()}, 34)
    # shard 10 → the merge (no record: the default 10 s) → the report
    assert nodes[chain[0]][1]["shard"] == "10" and length == 120.0 + 10.0 + cp.UNRECORDED["report"]


def test_a_jobs_own_cpu_record_wins_over_snakemakes(tmp_path):
    """Where a job wrote the kernel's count of itself (``X.cpu.json``, ``python -m ctbench.cpu_record``), that is its
    time; Snakemake's sampled record (``X.tsv``) misses about a fifth of a job's CPU."""
    import json

    _record(tmp_path, "evaluate", "single_mnist_s0", 5.0)
    _record(tmp_path, "evaluate", "single_mnist_s1", 7.0)
    (tmp_path / "evaluate" / "single_mnist_s1.cpu.json").write_text(json.dumps({"cpu_seconds": 8.5}))
    records = dict(cp.read_records(tmp_path)["evaluate"])
    assert records == {"single_mnist_s0": 5.0, "single_mnist_s1": 8.5}


def test_a_result_sets_job_records_give_the_folders_times(tmp_path):
    """``ctbench stage-times --jobs-out`` keeps every job's record in the result set (report/benchmarks_jobs.csv),
    so that the critical path can be computed after the run's folder is gone: read from that file, every job of the
    DAG gets the time it gets from the folder (the own record where it wins, part folders counted for their rule)."""
    import json

    from ctbench.cli import main

    bench = tmp_path / "benchmarks"
    for rule, name, cpu in [("evaluate", "single_mnist_s0", 5.0), ("evaluate", "single_mnist_s1", 7.0),
                            ("grid_chunk", "tune_moons_bl_c10_s0", 30.0), ("grid_chunk", "tune_moons_bl_c1_s0", 20.0),
                            ("consistency_black2022", "epileptic_seizure_s0", 584.0), ("report", "report", 200.0)]:
        _record(bench, rule, name, cpu)
    (bench / "evaluate" / "single_mnist_s1.cpu.json").write_text(json.dumps(
        {"user_seconds": 8.0, "system_seconds": 0.5, "cpu_seconds": 8.5, "wall_seconds": 8.0, "max_rss_mb": 300.0,
         "exit_code": 0}))
    jobs = tmp_path / "report" / "benchmarks_jobs.csv"
    assert main(["stage-times", "--benchmarks", str(bench), "--out", str(tmp_path / "report" / "benchmarks.csv"),
                 "--jobs-out", str(jobs)]) == 0
    from_file, from_folder = cp.read_records(jobs), cp.read_records(bench)
    assert {r: sorted(v) for r, v in from_file.items()} == {r: sorted(v) for r, v in from_folder.items()}
    assert dict(from_file["evaluate"])["single_mnist_s1"] == 8.5 and "consistency" in from_file
    nodes, edges = cp.parse_dot(DOT)
    parents = defaultdict(list)
    for a, b in edges:
        parents[b].append(a)
    inherited = cp.fill_wildcards(nodes, parents)
    assert (cp.job_times(nodes, from_file, {}, {}, 10.0, inherited)
            == cp.job_times(nodes, from_folder, {}, {}, 10.0, inherited))


def test_a_job_on_several_cores_counts_its_wall_time(tmp_path):
    """A job whose own record shows well over one CPU-second per wall second ran on several cores (the LeNet CT job
    at ``lenet.search_threads``): on the path it takes its wall time, from the folder and from the result set's
    file alike; a one-core job keeps its CPU time."""
    import json

    from ctbench.cli import main

    bench = tmp_path / "benchmarks"
    _record(bench, "lenet_train", "mnist_vanilla_s0", 90.0)
    # Snakemake's own record of the two-thread job: its wall time, and the CPU its sampling saw
    (bench / "lenet_train" / "mnist_full_s0.tsv").write_text("s\tcpu_time\n480.0\t700.0\n")
    (bench / "lenet_train" / "mnist_full_s0.cpu.json").write_text(json.dumps(
        {"user_seconds": 890.0, "system_seconds": 10.0, "cpu_seconds": 900.0, "wall_seconds": 480.0,
         "max_rss_mb": 1500.0, "exit_code": 0}))
    (bench / "lenet_train" / "mnist_vanilla_s0.cpu.json").write_text(json.dumps(
        {"user_seconds": 99.0, "system_seconds": 1.0, "cpu_seconds": 100.0, "wall_seconds": 95.0,
         "max_rss_mb": 900.0, "exit_code": 0}))
    assert dict(cp.read_records(bench)["lenet_train"]) == {"mnist_full_s0": 480.0, "mnist_vanilla_s0": 100.0}
    # the own record's CPU, not Snakemake's sample, and its wall: it ran on ~2 cores
    jobs = tmp_path / "report" / "benchmarks_jobs.csv"
    assert main(["stage-times", "--benchmarks", str(bench), "--out", str(tmp_path / "report" / "benchmarks.csv"),
                 "--jobs-out", str(jobs)]) == 0
    assert dict(cp.read_records(jobs)["lenet_train"]) == {"mnist_full_s0": 480.0, "mnist_vanilla_s0": 100.0}
    assert cp.duration(100.0, 95.0) == 100.0 and cp.duration(100.0, None) == 100.0
    assert cp.duration(130.0, 100.0) == 100.0
    # the set's two-thread LeNet evaluation (1.248 CPU-s per wall second) and its busiest one-thread job (0.995)
    assert cp.duration(67.09, 53.75) == 53.75 and cp.duration(35.365, 35.53) == 35.365
