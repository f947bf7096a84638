"""People's labels of a run's ideas: random draws, labels in and out, the matcher measured on them, and
prediction-powered estimates that combine a few labels with the matcher's calls on every idea."""
