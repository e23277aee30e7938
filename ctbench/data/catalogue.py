"""The catalogue of raw data files (:data:`FILES`): path, sha256, canonical source, licence and the pinned
download URL of each, taken from ``shared/data/MANIFEST.md`` (see :mod:`.files` for how they are checked, fetched
and cached)."""

from __future__ import annotations

from dataclasses import dataclass

_GH = "https://raw.githubusercontent.com"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_CEJL = f"{_GH}/JuliaTrustworthyAI/CounterfactualExplanations.jl"


@dataclass(frozen=True)
class RawFile:
    """One file of the data directory (``path`` is relative to it)."""

    path: str
    sha256: str
    source_url: str
    licence: str
    #: URL serving these bytes (or this content, for .gz); ``None``: obtain by hand (see ``note``).
    download_url: str | None = None
    #: sha256 of the decompressed content (``.gz`` files only).
    content_sha256: str | None = None
    #: the download is a zip archive; this member is extracted (and gzipped when ``path`` ends in ``.gz``).
    archive_member: str | None = None
    note: str = ""


_CC_BY = "CC BY 4.0 (UCI Machine Learning Repository)"

FILES: dict[str, RawFile] = {f.path: f for f in [
    # -- Adult (UCI id 2) -----------------------------------------------------------------------------------------
    RawFile("adult/adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.data",
            note="Becker & Kohavi (1996); md5 5d7c39d7b8804f071cdd1f2a7c460872 = UCI's"),
    RawFile("adult/adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.test",
            note="not used by the reference (Adult uses adult.data only)"),
    RawFile("adult/adult.names", "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
            "https://archive.ics.uci.edu/dataset/2/adult", _CC_BY, f"{_UCI}/adult/adult.names"),
    # -- California housing (Pace & Barry 1997) ------------------------------------------------------------------
    RawFile("california_housing/cal_housing.data",
            "a2b44dcc7e1c9091b43c4f458b25cbd1f7e8068d08edd26bc4703108d3fa6214",
            "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
            "no explicit licence (StatLib); derived from public-domain US Census data; cite Pace & Barry (1997)",
            f"{_GH}/we-b/datasets_for_ai/85985fbd60d1a2d8d098a55acb544cfac7818216/cal_housing.data",
            note="= cal_housing.tgz member CaliforniaHousing/cal_housing.data (what scikit-learn downloads)"),
    RawFile("california_housing/cal_housing.domain",
            "49875a8323c6149941a1b7467942df111d255c3693dea491549a2eb94f5e32fd",
            "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
            "no explicit licence (StatLib); cite Pace & Barry (1997)",
            f"{_GH}/RouNNdeL/uma-projekt/183153ca6f584dbf4146eae9b62d9f75ecf60d45/cal_housing.domain"),
    # -- Default of credit card clients (UCI id 350), Kaggle CSV form --------------------------------------------
    RawFile("credit_default/UCI_Credit_Card.csv",
            "a0f0ab49d6326671d6cd83be5c88dcf18007025fe9a53ecd699119c871176ca1",
            "https://archive.ics.uci.edu/dataset/350/default+of+credit+card+clients", _CC_BY,
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/raw/"
            "UCI_Credit_Card.csv",
            note="Kaggle CSV conversion of the UCI .xls, as used by CounterfactualExplanations.jl"),
    # -- Give Me Some Credit (Kaggle 2011) -----------------------------------------------------------------------
    RawFile("give_me_some_credit/cs-training.csv.gz",
            "b2d5b080b10ca9d559fa799b1ff5530fe20f5c90576c13a34c8bde981b7c6582",
            "https://www.kaggle.com/c/GiveMeSomeCredit",
            "Kaggle competition rules (not an open licence): keep internal, do not redistribute",
            f"{_GH}/SureshThyagara1/CYO---Kaggle-Give-Me-Some-Credit/a83342095669125411d252e2c07cc10cb44e75c9/"
            "Data/cs-training.csv.zip",
            content_sha256="1bd46da486a5708c58c7b01a034fae2a13b327f6f7b62ea7ba4fe3b5824b24ac",
            archive_member="cs-training.csv",
            note="Kaggle's cs-training.csv, gzipped; or download it from Kaggle and run `gzip -9 -n cs-training.csv`"),
    # -- MNIST (LeCun et al. 1998) -------------------------------------------------------------------------------
    RawFile("mnist/train-images-idx3-ubyte.gz", "0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz",
            content_sha256="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            note="official IDX content (uncompressed md5 6bbc9ace898e44ae57da46a324031adb); any gzip wrapper"),
    RawFile("mnist/train-labels-idx1-ubyte.gz", "ec02e7948609e5754d47881c09b8afdd8dfa60600b9e5388c8c54a67069ec772",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/train-labels-idx1-ubyte.gz",
            content_sha256="65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    RawFile("mnist/t10k-images-idx3-ubyte.gz", "167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/t10k-images-idx3-ubyte.gz",
            content_sha256="0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    RawFile("mnist/t10k-labels-idx1-ubyte.gz", "fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c",
            "http://yann.lecun.com/exdb/mnist/",
            "no explicit licence; commonly listed as CC BY-SA 3.0; cite LeCun, Cortes & Burges (1998)",
            f"{_GH}/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9/t10k-labels-idx1-ubyte.gz",
            content_sha256="ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    # -- Statlog German credit (UCI id 144) ----------------------------------------------------------------------
    RawFile("german_credit/german.data", "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.data"),
    RawFile("german_credit/german.data-numeric", "2752b044394958ab6dd193a0b56ca0f0b3a2d8bc7cb8c008e35a5e84bbec02f8",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.data-numeric"),
    RawFile("german_credit/german.doc", "69b92cb551111bc37098698288849c96f0fd87ce81a2e54451ff39aa1e53fe49",
            "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data", _CC_BY,
            f"{_GH}/lfvvercosa/base_german/79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a/german.doc"),
    # -- FICO HELOC (2018) ---------------------------------------------------------------------------------------
    RawFile("heloc/heloc_dataset.csv", "e5a914f742ad7f8472c5417902ec06b321ebc5de1d68ec13f136d62c87a7fbf3",
            "https://community.fico.com/s/explainable-machine-learning-challenge",
            "FICO data licence agreement (not an open licence): keep internal, do not redistribute",
            f"{_GH}/explainX/explainx/a2b3d1c5e04032230d4dd4fddffa04408a5d3b31/aix360/data/heloc_data/"
            "heloc_dataset.csv",
            note="FICO's heloc_dataset_v1.csv (10,459 x 24)"),
    # -- optional (consistency study extensions) -----------------------------------------------------------------
    RawFile("cardiotocography/CTG.xls", "d6aa62e82625e59f9d5b05bc8fc52af9ea67bdf2a23f1faca8511d5618fcb421",
            "https://archive.ics.uci.edu/dataset/193/cardiotocography", _CC_BY,
            f"{_GH}/cyniphile/ctg/0d5e9715bfe661f08dca7353545a4eeeffafbacf/data/CTG.xls"),
    RawFile("epileptic_seizure/bonn_eeg_sets_ZONFS.zip",
            "4e580084d35961e849860631770ed4656e452b00e5ecf6ada1ce59ea6eabde13",
            "https://archive.ics.uci.edu/dataset/388/epileptic+seizure+recognition",
            "University of Bonn EEG database, free for research; cite Andrzejak et al. (2001)",
            f"{_GH}/saumitkunder/EEG-DATA-SYNTHESIS-USING-GANS/a0d217ac534634c08e3ecd77b2a15caa03bce222/Dataset/"
            "Eplieptic%20Seizure%20Detection%20Dataset.zip"),
    # -- derived: TaijaData / CounterfactualExplanations.jl processed tables (reference rows of CH, Cred, GMSC) ----
    RawFile("taijadata_processed/cal_housing.csv", "7777da56fae024f8a0cd2eb014c8f03b75a0eae591376828e38ff21156be4aef",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl",
            "as California housing (derived table)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/cal_housing.csv",
            note="balanced by an unseeded undersample; the reference's row order"),
    RawFile("taijadata_processed/credit_default.csv",
            "9105fb70f002f4963426b16a229e35f5cd118d2613b9e90e72139e065c8c1380",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as credit default: " + _CC_BY,
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/credit_default.csv",
            note="balanced by an unseeded undersample; target flipped (1 = no default)"),
    RawFile("taijadata_processed/gmsc.csv", "e00a2463dcceb90a0ac6ea37044750f417ebe62f51380a9bc75d6e08fd43e0f4",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as Give Me Some Credit (Kaggle rules)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/gmsc.csv",
            note="NA rows dropped, balanced by an unseeded undersample; target flipped (1 = no delinquency)"),
    RawFile("taijadata_processed/german_credit.csv",
            "891856321f6ffafc20f1924d553b8b5bdb5e41ad46588742f7b1f2b4af9524da",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as German credit: " + _CC_BY,
            f"{_CEJL}/27b2bbaeabdd3253203de9e7bab1f52a14d881b3/dev/artifacts/upload/data/tabular/german_credit.csv"),
    RawFile("taijadata_processed/raw/cal_housing.csv",
            "d77e47abf8adbf425f82dd80ebc02dc6a30dc6e9525fa1ee9076789647cba2bf",
            "https://github.com/JuliaTrustworthyAI/TaijaData.jl", "as California housing (derived table)",
            f"{_CEJL}/318bca3f93d4b7ee7d604a30a63433c72ba38bbc/dev/artifacts/upload/data/tabular/raw/cal_housing.csv",
            note="scikit-learn fetch_california_housing(as_frame=True) exported to CSV"),
]}

