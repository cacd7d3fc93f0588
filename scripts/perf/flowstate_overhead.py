"""FlowState per-step state overhead (validate, commit, disclose, serialize) vs repository size.
Wrapper around `flowstate.perf`: `python -m scripts.perf.flowstate_overhead`."""
from flowstate.perf import main

if __name__ == "__main__":
    main()
