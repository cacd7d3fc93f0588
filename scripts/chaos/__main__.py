import os
import sys

# The suite replays a recorded scripted run and compares every run with it byte for byte: the offline
# demo's seeded noise (experiment.scripted_noise, which the default experiment sets) would give one
# prompt different replies in the recording and make the reference unreplayable. Off, as in the tests.
os.environ.setdefault("HARNESS_DEMO_NOISE", "0")

from scripts.chaos.suite import main  # noqa: E402

sys.exit(main())
