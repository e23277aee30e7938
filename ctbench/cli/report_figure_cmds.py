"""``ctbench report-figures``: the report's figures that need none of its tables (grid searches, tuning, robustness),
a workflow job of their own beside ``ctbench report --no-figures`` (issue 21), so a figure-code change reruns only
them and the report job does not draw. Also the registered datasets' labels, which both commands pass in."""

from __future__ import annotations

from pathlib import Path


def registered_labels() -> dict[str, str]:
    """Name (and alias) → label of every registered dataset outside the paper's catalog whose loader gave a
    ``label=`` (a plugin's, :func:`ctbench.data.register`): the report layer does not import the registry, so its
    commands pass these in (:func:`ctbench.report.common.dataset_labels`); the paper's datasets keep their labels."""
    from ..data.registry import available, label
    from ..facts import DATASETS

    out = {}
    for name, info in available().items():
        if name not in DATASETS and label(name) != name:
            out.update(dict.fromkeys((name, *info.get("aliases", ())), label(name)))
    return out


def _cmd_report_figures(args) -> int:
    from ..errors import BadFileError
    from ..io import recording_writes
    from ..report.common import dataset_labels
    from ..report.figures.report_figures import write_report_figures
    from ..report.run_set import sweep_stage

    inputs = [*(args.grids or []), *(args.robustness or [])]
    missing = [f for f in inputs if not Path(f).is_file()]
    if missing:  # checked before anything is drawn
        raise BadFileError(f"report-figures: input file(s) not found: {', '.join(missing)}")
    out = Path(args.out)
    with recording_writes() as made, dataset_labels(registered_labels()):
        written = write_report_figures(out, grids=args.grids or [], robustness=args.robustness or [])
    moved = sweep_stage(out, "report_figures", made)
    if moved:
        print(f"moved {len(moved)} figure file(s) of an earlier run, not drawn now, to {out.name}.stale: "
              f"{', '.join(moved)}")
    print(f"report figures in {out}: " + (", ".join(f"{k} {len(v)}" for k, v in written.items()) or "none"))
    return 0


def add_cli(sub) -> None:
    """Register ``report-figures``."""
    p = sub.add_parser("report-figures", help="the report's grid, tuning and robustness figures (PNG + PDF) into "
                                              "the report folder; `ctbench report --no-figures` leaves them to this")
    p.add_argument("--grids", nargs="*", help="grid chunk CSVs (ctbench grid run): the grid figures (grids/) and, "
                                              "for the tuning grids, the tuning figures (tuning/)")
    p.add_argument("--robustness", nargs="*", help="outputs of ctbench robustness: robustness.png / .pdf")
    p.add_argument("--out", required=True, help="the report folder (ctbench report --out)")
    p.set_defaults(func=_cmd_report_figures)
