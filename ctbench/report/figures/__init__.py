"""Figures of the report, drawn from result files in one theme (:mod:`.style`)."""
