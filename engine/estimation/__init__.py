"""How right is it: precision, recall, F1 and the number of duplicates in the whole project,
estimated with 95% intervals from a random sample of judged pairs.

Pure statistics (numpy only): no project, no store, no Qt. `strata` splits the population of
pairs, `drawing` picks pairs at random inside a stratum, `allocation` decides which stratum
the next verdict should come from (`next_draws` applies both to a sample's draws so far),
`estimators` turns verdicts into figures with intervals (`judged_draws` feeds it a
sample's verdicts, with the weights that count rows) and `simulation` runs the whole design
on a population whose every label is known (tests and `benchmarks/estimate.py` check
coverage with it). `engine.services.measuring` applies it to a project.
"""
