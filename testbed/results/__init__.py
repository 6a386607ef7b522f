"""Results: each run's folder (manifest, metrics), comparisons and HTML reports against the papers' figures."""
