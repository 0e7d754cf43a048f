"""What the A2A client suites share: their PASS/FAIL/INFO lines and the tally they exit with.

Each suite makes one `Report` (its prefix names the suite in run.sh's output) and ends with
`return REPORT.finish(started)`: the summary line, and 0 only if no check failed.
"""

import time


class Report:
    def __init__(self, prefix=""):
        self.prefix = prefix
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        """One check: a PASS line, or a FAIL line with `detail`. Returns `ok`."""
        if ok:
            self.passed += 1
            print(f"PASS {self.prefix}{name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {self.prefix}{name}: {detail}", flush=True)
        return ok

    def info(self, text):
        """A line that is neither a pass nor a failure."""
        print(f"INFO {self.prefix}{text}", flush=True)

    def finish(self, started):
        """The summary line (time since `started`, a `time.monotonic()`); the exit code."""
        print(f"{self.prefix}{self.passed} passed, {self.failed} failed ({time.monotonic() - started:.1f}s)")
        return 0 if self.failed == 0 else 1
