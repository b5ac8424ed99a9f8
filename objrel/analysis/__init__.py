"""Analyses of stored runs: summary rows, studies, significance tests, sweeps, export and the HTML report."""
