"""The documentation's generated sections (`testbed report docs`): made from the registry, the
suites, the paper files, the profiles, the topologies and the kept reference runs."""
