"""The Jupyter Book built from a report folder: the include pages of tables, figures, the ledger and the records, and
the offline build."""
