"""The LLM judge inside HindSight: stored runs rated on the paper's four dimensions, pairs of ideas compared in
both orders, the judge's stability audited and the judge checked on InnoEval.

prompts.py (every prompt, versioned), backends.py (the packaged model through the verifier's llama.cpp runtime, any
OpenAI-compatible endpoint through its chat client), cache.py (revisions and answers in SQLite), pointwise.py
(rating a run, export), pairwise.py (pairwise novelty), audit.py (flip rates and agreement of two judges),
innoeval.py (the judge on InnoEval's files)."""
