"""The run machinery every suite shares, knowing no experiment: the registry that finds them
(each package under testbed/experiments/), the runner, a run's context and session, the
suites' generated rows and their points, quiet pausing, progress and the capacity planner."""
