"""What every clbo test script shares: its exit codes, its failure and its scratch folders.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from clbo_script import SKIP, fail, scratch  # noqa: E402
"""
import atexit
import shutil
import sys
import tempfile

# ctest's SKIP_RETURN_CODE for every script test: skipped, with the reason printed.
SKIP = 77


def fail(msg):
    """Ends the test as failed, saying why."""
    print("FAIL: " + msg)
    sys.exit(1)


def scratch(prefix="clbo-test-"):
    """A temporary folder removed when the test exits, passed or failed."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
