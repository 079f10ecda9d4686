"""The project's services, one concern each; `engine.project.Project` builds them over one
store and hands each the shared state it needs (the active model, the live index, the rows
cluster cuts keep), never the whole project.

- `active_model.ActiveModel`: which model serves, loaded; preferences; the spare.
- `live_index.LiveIndex`: the active model's HNSW index in memory and what it matches.
- `vectors.Vectors`: encoding, the index, search.
- `rows.Rows`: importing, deleting and browsing rows.
- `clusters.Clusters`: the neighbour graph, cuts, verdicts laid over them, review plots.
- `verdicts.Verdicts`: verdicts on pairs, canonical choices, the threshold curve.
- `versions.ModelVersions`: fine-tuning, listing, activating, exporting, deleting versions.
- `exports.Exports`: spreadsheets out.
- `measuring.Measuring`: the quality estimate from a random sample of judged pairs.
- `summary.summarize`: counts for `info`.
"""
