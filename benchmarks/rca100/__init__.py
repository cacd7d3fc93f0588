"""RCA-100 (Alibaba Cloud AIOps, CC BY-NC-SA 4.0): root-cause analysis of injected incidents in a
Kubernetes demo store, as PoS runs it (docs/pos-benchmarks.md §2). No RCA-100 data ships with this
project; `data_dir: fixtures` is our invented synthetic fixture (`synth.py`)."""
