"""Containment of the implementation beyond one process group: the loopback-only network namespace the session
runs in (sandbox) and the watchdog that cleans up after a suite killed outright (watchdog, watchdog_process)."""
