"""``ctbench bench``: the core and population benchmarks (:mod:`ctbench.experiments.bench`,
:mod:`ctbench.experiments.bench_population`), written as JSON and Markdown. A command module of its own so that a change
of benchmark code moves no paper stage's code fingerprint (:mod:`ctbench.code_version`)."""

from __future__ import annotations

from pathlib import Path

from ..io import atomic_write_json, atomic_write_text


def _write_bench(report: dict, out: Path, tag: str, to_markdown) -> None:
    atomic_write_json(out / f"{tag}.json", report)
    md = to_markdown(report)
    atomic_write_text(out / f"{tag}.md", md)
    print(md)


def _cmd_bench(args) -> int:
    out = Path(args.out)
    if args.population:
        from ..experiments import bench_population as bp

        where = "cuda" if args.device.startswith("cuda") else "cpu1"
        _write_bench(bp.suite(quick=args.quick, device=args.device), out,
                     f"population-{where}" + ("-quick" if args.quick else ""), bp.to_markdown)
        return 0
    from ..experiments import bench

    tag = ("cuda" if args.device.startswith("cuda") else f"cpu{args.threads}") + ("-quick" if args.quick else "")
    _write_bench(bench.suite(args.device, args.threads, args.quick), out, f"core-{tag}", bench.to_markdown)
    return 0


def add_cli(subparsers) -> None:
    """Register ``bench``."""
    b = subparsers.add_parser("bench", help="throughput and training-time benchmarks")
    b.add_argument("--out", default="benchmarks/results", help="folder for the JSON/Markdown results")
    b.add_argument("--device", default="cpu")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--quick", action="store_true", help="small sizes (a smoke run of the benchmark itself)")
    b.add_argument("--population", action="store_true",
                   help="G single runs in a loop vs one population of G (G = 1, 9, 36, 100; on --device cuda 1, 9, "
                        "36; LS and Adult size)")
    b.set_defaults(func=_cmd_bench)
