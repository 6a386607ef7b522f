"""The experiments: one package per experiment (and the smoke and fault suites), each declaring
its registry entry (`EXPERIMENT = Experiment(...)`) beside its modules; the harness finds them."""
