"""Tables of the report, each with its sidecar: Table 1 to 3, the appendix tables, the grid effects, the consistency
study's tables, CPU time per stage and the comparison of two report folders."""
