"""Reading and cleaning the raw files of the tabular datasets (reference §6.2 step 1), one reader per file.

Each reader returns a :class:`~.tabular_encoding.RawTable` in final row order: the feature columns, the labels and the
level order of every categorical column. ``*_raw`` readers rebuild the class-balanced tables from the original
files with a seeded undersample (:func:`_undersample`); ``*_processed`` readers read the TaijaData tables. The
pipeline that splits, encodes and caches the tables is :mod:`.tabular`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import files
from .tabular_encoding import RawTable

#: Second entropy word of the undersampling RNG ``default_rng([seed, UNDERSAMPLE_STREAM])``.
UNDERSAMPLE_STREAM = 2


def _undersample(frame: pd.DataFrame, y: np.ndarray, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Balance classes: keep every row of the smallest class and as many random rows of each other class, then
    shuffle all kept rows (the recipe of ``MLUtils.undersample(shuffle=true)``, with a seeded RNG)."""
    classes, counts = np.unique(y, return_counts=True)
    m = int(counts.min())
    keep = []
    for c in classes:
        members = np.flatnonzero(y == c)
        keep.append(members if len(members) == m else rng.choice(members, size=m, replace=False))
    idx = rng.permutation(np.concatenate(keep))
    return frame.iloc[idx].reset_index(drop=True), y[idx]


# -- Adult -------------------------------------------------------------------------------------------------------

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
                 "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "country"]
#: Label encodings of CounterfactualExplanations.jl ``dev/artifacts/tabular.qmd`` (code = position in the list).
ADULT_CODES: dict[str, list[str]] = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc", "9th",
                  "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"],
    "marital_status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                   "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
                   "Priv-house-serv", "Protective-serv", "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
                "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland",
                "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia", "Hungary",
                "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador", "Trinadad&Tobago",
                "Peru", "Hong", "Holand-Netherlands"],
}
#: TaijaData's ``cats`` list for Adult (order of the categorical groups).
ADULT_CATS = ("workclass", "education", "marital_status", "occupation", "relationship", "race", "sex", "country")


def _adult_level_order(col: str, present: set[str]) -> list[str]:
    codes = {lab: i for i, lab in enumerate(ADULT_CODES[col])}
    unknown = present - set(codes) - {"?"}
    if unknown:
        raise ValueError(f"adult: column {col!r} has unexpected values {sorted(unknown)}")
    if "?" in present:  # CSV.jl reads the column as strings: codes sort as strings, "?" after the digits
        return sorted(present, key=lambda v: "?" if v == "?" else str(codes[v]))
    return sorted(present, key=lambda v: codes[v])


def read_adult(raw_dir: Any, seed: int) -> RawTable:
    path = files.raw_path("adult/adult.data", raw_dir)
    df = pd.read_csv(path, header=None, names=[*ADULT_COLUMNS, "income"], skipinitialspace=True,
                     skip_blank_lines=True)
    income = df.pop("income").astype(str).str.rstrip(".")
    if not set(income) <= {"<=50K", ">50K"}:
        raise ValueError(f"adult: unexpected labels {sorted(set(income))}")
    y = (income == ">50K").to_numpy().astype(np.int64)
    levels = {}
    for col in ADULT_CATS:
        df[col] = df[col].astype(str).astype(object)
        levels[col] = _adult_level_order(col, set(df[col]))
    return RawTable(df, y, levels)


# -- California housing ------------------------------------------------------------------------------------------

CH_FEATURES = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude"]


def read_ch_processed(raw_dir: Any) -> RawTable:
    df = pd.read_csv(files.raw_path("taijadata_processed/cal_housing.csv", raw_dir))
    return RawTable(df[CH_FEATURES].copy(), df["target"].to_numpy().astype(np.int64))


def read_ch_raw(raw_dir: Any, seed: int) -> RawTable:
    raw = pd.read_csv(files.raw_path("california_housing/cal_housing.data", raw_dir), header=None,
                      names=["longitude", "latitude", "housingMedianAge", "totalRooms", "totalBedrooms",
                             "population", "households", "medianIncome", "medianHouseValue"])
    # scikit-learn's fetch_california_housing features (identical to taijadata_processed/raw/cal_housing.csv)
    df = pd.DataFrame({
        "MedInc": raw.medianIncome, "HouseAge": raw.housingMedianAge,
        "AveRooms": raw.totalRooms / raw.households, "AveBedrms": raw.totalBedrooms / raw.households,
        "Population": raw.population, "AveOccup": raw.population / raw.households,
        "Latitude": raw.latitude, "Longitude": raw.longitude,
    })
    value = raw.medianHouseValue.to_numpy() / 1e5
    y = (value >= np.median(value)).astype(np.int64)
    df, y = _undersample(df, y, np.random.default_rng([seed, UNDERSAMPLE_STREAM]))
    return RawTable(df, y)


# -- credit default (Taiwan) -------------------------------------------------------------------------------------

CRED_LEVELS = {"SEX": [1, 2], "EDUCATION": [0, 1, 2, 3, 4, 5, 6], "MARRIAGE": [0, 1, 2, 3]}


def _cred_table(df: pd.DataFrame, y: np.ndarray) -> RawTable:
    for col in CRED_LEVELS:
        df[col] = df[col].astype(np.int64).astype(object)
    return RawTable(df, y, dict(CRED_LEVELS))


def read_cred_processed(raw_dir: Any) -> RawTable:
    df = pd.read_csv(files.raw_path("taijadata_processed/credit_default.csv", raw_dir))
    y = df.pop("target").to_numpy().astype(np.int64)
    return _cred_table(df, y)


def read_cred_raw(raw_dir: Any, seed: int) -> RawTable:
    df = pd.read_csv(files.raw_path("credit_default/UCI_Credit_Card.csv", raw_dir))
    df = df.drop(columns=["ID"]).dropna()
    y = 1 - df.pop("default.payment.next.month").to_numpy().astype(np.int64)  # 1 = no default (positive outcome)
    df, y = _undersample(df, y, np.random.default_rng([seed, UNDERSAMPLE_STREAM]))
    return _cred_table(df, y)


# -- Give Me Some Credit -----------------------------------------------------------------------------------------

def read_gmsc_processed(raw_dir: Any) -> RawTable:
    df = pd.read_csv(files.raw_path("taijadata_processed/gmsc.csv", raw_dir))
    y = df.pop("target").to_numpy().astype(np.int64)
    return RawTable(df, y)


def read_gmsc_raw(raw_dir: Any, seed: int) -> RawTable:
    df = pd.read_csv(files.raw_path("give_me_some_credit/cs-training.csv.gz", raw_dir))
    df = df.drop(columns=[df.columns[0]]).dropna().reset_index(drop=True)
    y = (df.pop("SeriousDlqin2yrs").to_numpy() == 0).astype(np.int64)  # 1 = no delinquency (positive outcome)
    df, y = _undersample(df, y, np.random.default_rng([seed, UNDERSAMPLE_STREAM]))
    return RawTable(df, y)


# -- German credit (Statlog) -------------------------------------------------------------------------------------

GERMAN_COLUMNS = ["checking_status", "duration", "credit_history", "purpose", "credit_amount", "savings",
                  "employment", "installment_rate", "personal_status_sex", "other_debtors", "residence_since",
                  "property", "age", "other_installment_plans", "housing", "existing_credits", "job",
                  "num_dependents", "telephone", "foreign_worker"]
GERMAN_NUMERIC = {"duration", "credit_amount", "installment_rate", "residence_since", "age", "existing_credits",
                  "num_dependents"}


def read_german(raw_dir: Any, seed: int) -> RawTable:
    df = pd.read_csv(files.raw_path("german_credit/german.data", raw_dir), sep=r"\s+", header=None,
                     names=[*GERMAN_COLUMNS, "class"])
    y = (df.pop("class").to_numpy() == 1).astype(np.int64)  # 1 = good, 0 = bad
    levels = {}
    for col in GERMAN_COLUMNS:
        if col not in GERMAN_NUMERIC:
            df[col] = df[col].astype(str).astype(object)
            levels[col] = sorted(set(df[col]), key=lambda v: int(v[1:]))  # A40 < A41 < … < A49 < A410
    return RawTable(df, y, levels)


# -- HELOC -------------------------------------------------------------------------------------------------------

def read_heloc(raw_dir: Any, seed: int) -> RawTable:
    df = pd.read_csv(files.raw_path("heloc/heloc_dataset.csv", raw_dir))
    target = df.pop("RiskPerformance").astype(str)
    keep = ~(df == -9).all(axis=1).to_numpy()  # no credit-bureau record at all
    y = (target == "Good").to_numpy().astype(np.int64)[keep]
    return RawTable(df[keep].reset_index(drop=True), y)
