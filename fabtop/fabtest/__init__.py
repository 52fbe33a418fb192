"""``fabtop test``'s pure core: rails, plan shapes, statistics, verdicts and their evidence.

Nothing here does I/O: the runner that starts the engines over SSH hands these modules
what it measured and the monitoring pipeline's samples of the same window.
"""
