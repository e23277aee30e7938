"""Tables, figures and the claims ledger built from evaluation results."""
