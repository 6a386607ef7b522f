"""The experiments: one module per experiment declaring its suite, scales and figures, the registry, and the runner."""
