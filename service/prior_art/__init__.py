"""Prior art: each scored idea's top K papers in the look-back window before the cutoff, decided by the forward
side's matcher, and its class on the two sides (anticipated, recalled, already_published, unrealised, unknown).

window (the look-back window) -> side (search and decide it, the classes) -> store (tables prior_art and
prior_art_matches, migration 0011_prior_art); classes holds the definitions. The analyses read it through
service.analyses.prior_art. See docs/prior-art.md."""
