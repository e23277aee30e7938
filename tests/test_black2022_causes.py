"""The consistency chapter's measured causes (issue 25, item 3), rendered from the committed benchmark files: a
changed file changes the text, a missing one gives a note, a file without a needed column stops with its name."""

import shutil

import pandas as pd
import pytest

from ctbench.report.book.consistency_causes import CAUSES, MARGINS, MODEL_SD, compare, render_causes
from ctbench.report.book.consistency_pages import pages


@pytest.fixture
def files(tmp_path):
    c, m = tmp_path / CAUSES.name, tmp_path / MARGINS.name
    shutil.copy(CAUSES, c)
    shutil.copy(MARGINS, m)
    return c, m


def test_committed_measurements_render_with_the_papers_values(files):
    text = render_causes(*files)
    # CTG Min-ε PGD: the authors' code's step moves the invalidation rates, but not near the paper's 0.04 / 0.09
    assert "| Min-ε PGD step per bound | CTG, Min eps PGD | 20 |" in text
    assert "0.56 → 0.45 (0.04) | 0.67 → 0.56 (0.09) |" in text
    # Taiwanese Credit z-scored instead of min-max scaled moves Min-eps PGD's RS rate most (0.07 -> 0.80)
    assert ("No measured difference moves an invalidation rate by more than 0.73 (the largest: Taiwanese Credit "
            "scaling on Taiwanese Credit)") in text
    assert ("| Taiwanese Credit scaling | Taiwanese Credit, Min L1 | 20 | 20 numeric attributes min-max to [0; 1], SEX "
            "and one-hot columns 0/1 → all 32 columns z-scored (StandardScaler after one-hot) | 1.00 → 1.00 (1.00) | "
            "0.26 → 1.80 (1.56) | 0.11 → 0.30 (0.30) | 0.36 → 0.77 (0.78) |") in text
    assert ("- Taiwanese Credit scaling (Taiwanese Credit): invalidation rates within 0.05 of the paper's in 3 → 4 of "
            "10 cells; mean ℓ2 cost within the paper's SD (Table 4) for 1 → 4 of 5 methods.") in text
    assert ("- German Credit one-hot columns (German Credit): invalidation rates within 0.05 of the paper's in 5 → 4 "
            "of 10 cells; mean ℓ2 cost within the paper's SD (Table 4) for 2 → 4 of 5 methods.") in text
    # CTG as the authors' code prepares it (datalib: one min-max for the whole table): Table 2's Min-ℓ1 success
    assert ("| CTG scaling | CTG, Min L1 | 20 | each feature min-max to [0; 1] (App. B.1), split default_rng([42, 3]), "
            "1,701 / 425 → one min-max for the whole table") in text
    assert "(datalib Normalize) | 0.51 → 1.00 (1.00) | 0.24 → 0.12 (0.17) | 0.45 → 0.48 (0.07) |" in text
    # the authors' PGD box (one scalar range) changes nothing on [0, 1] data, and German Credit's rates on z-scores
    assert "| Min-ε PGD box | Taiwanese Credit, Min eps PGD | 20 |" in text
    assert "| 0.35 → 0.23 (0.28) | 0.57 → 0.47 (0.61) |" in text
    # CTG's AC … DP as counts instead of per-second rates (both blocks are in CTG.xls) leaves Min-ℓ1's success at 0.51
    assert ("| CTG rate columns | CTG, Min L1 | 20 | per-second rates (AC.1 … DP.1) → counts over the recording "
            "(AC … DP) | 0.51 → 0.51 (1.00) |") in text
    assert "0.56 → 0.62 (0.04) | 0.67 → 0.69 (0.09) |" in text
    # Min-ℓ2's LOO rate on CTG (0.36) is below the paper's 0.48: no "stay above the paper's" sentence for CTG
    assert "On CTG our invalidation rates stay" not in text
    assert "0.00 of the 164 factuals with margin ≥ 15" in text  # Min-ℓ1 fails on every saturated factual
    c = compare(files[0])
    pgd = c[c["method"] == "Min eps PGD"]
    pub = dict(zip(pgd["dataset"], pgd["pub_iv_loo"], strict=True))
    assert pub == {"CTG": 0.04, "German Credit": 0.28, "Taiwanese Credit": 0.04, "Seizure": 0.94, "HELOC": 0.04}
    # the box of Min-ε PGD and SNS (the authors' one range): Taiwanese Credit's Min-ε PGD + SNS RS rate onto the paper's
    assert "| Min-ε PGD and SNS box | Taiwanese Credit, Min eps PGD + SNS | 20 |" in text
    assert "| 0.00 → 0.00 (0.00) | 0.17 → 0.09 (0.11) |" in text


def test_a_changed_file_changes_the_text(files):
    causes, margins = files
    df = pd.read_csv(causes)
    df = df[df["difference"] != "Taiwanese Credit scaling"]  # its 0.73 move would stay the largest
    row = (df["dataset"] == "CTG") & (df["difference"] == "Min-ε PGD step per bound")
    df.loc[row, ["alt_iv_loo", "alt_iv_rs"]] = [0.05, 0.10]
    gc = (df["difference"] == "German Credit one-hot columns") & (df["method"] == "Looveren et al.")
    df.loc[gc, ["alt_iv_loo", "alt_iv_rs", "alt_cost_l2"]] = [0.25, 0.40, 2.0]
    df.to_csv(causes, index=False)
    text = render_causes(causes, margins)
    assert "0.56 → 0.05 (0.04) | 0.67 → 0.10 (0.09) |" in text
    assert "| Taiwanese Credit scaling |" not in text
    assert ("- German Credit one-hot columns (German Credit): invalidation rates within 0.05 of the paper's in 5 → 6 "
            "of 10 cells; mean ℓ2 cost within the paper's SD (Table 4) for 2 → 3 of 5 methods.") in text
    assert "by more than 0.57 (the largest: Min-ε PGD step per bound on CTG)" in text
    assert "stay 0.23 to 0.60 above" not in text      # a measured move now reaches the gap: no such sentence
    m = pd.read_csv(margins)
    m.loc[(m["method"] == "Min L1") & m["margin_hi"].isna(), "success"] = 0.5
    m.to_csv(margins, index=False)
    assert "0.50 of the 164 factuals with margin ≥ 15" in render_causes(causes, margins)


def test_missing_and_bad_files(files, tmp_path):
    causes, margins = files
    assert "Not yet measured" in render_causes(tmp_path / "none.csv", margins)
    assert "margin" not in render_causes(causes, tmp_path / "none.csv").split("\n\n")[-1]
    pd.read_csv(causes).drop(columns="alt_iv_rs").to_csv(causes, index=False)
    with pytest.raises(ValueError, match=r"black2022-causes\.csv: column\(s\) \['alt_iv_rs'\] missing"):
        render_causes(causes, margins)


def test_the_chapter_includes_the_causes(tmp_path):
    assert pages(None)["consistency_causes"] == render_causes()


def test_per_model_spread_is_rendered_from_its_file(files, tmp_path):
    """Table 3's SD (over the models) against ours over the models: the paper's SD is read from Table 3, ours from
    the file; a changed file changes the sentence."""
    sd = tmp_path / MODEL_SD.name
    shutil.copy(MODEL_SD, sd)
    text = render_causes(*files, model_sd=sd)
    assert "0.56 ± 0.04 under LOO (paper 0.04 ± 0.03); 0.67 ± 0.05 under RS (paper 0.09 ± 0.04)" in text
    df = pd.read_csv(sd)
    df.loc[(df["method"] == "Min eps PGD") & (df["source"] == "rs"), "iv_sd"] = 0.2
    df.to_csv(sd, index=False)
    assert "0.67 ± 0.20 under RS (paper 0.09 ± 0.04)" in render_causes(*files, model_sd=sd)
    assert "Table 3's SD" not in render_causes(*files, model_sd=tmp_path / "none.csv")


def test_batch_order_rows_render_per_dataset(files):
    """The batch-order measurement (train.py --order): one row per dataset and method, and per dataset the count of
    cells within 0.05 under each order, read from the committed file."""
    text = render_causes(*files)
    assert "| batch order | CTG, Looveren et al. | 20 |" in text
    assert "| 0.45 → 0.11 (0.11) | 0.41 → 0.18 (0.18) |" in text
    assert ("- batch order (CTG): invalidation rates within 0.05 of the paper's in 1 → 4 of 10 cells") in text
    assert ("- batch order (HELOC): invalidation rates within 0.05 of the paper's in 5 → 1 of 10 cells") in text
    c = compare(files[0])
    b = c[c["difference"] == "batch order"]
    assert len(b) == 25 and set(b["dataset"]) == {"CTG", "German Credit", "HELOC", "Seizure", "Taiwanese Credit"}
