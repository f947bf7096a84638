#!/usr/bin/env bash
# Create .venv and install HindSight with its test extras; a no-op when pyproject.toml and the CPU's llama.cpp build
# options have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.hindsight-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch first and pinned: a bare requirement would pull a multi-GB CUDA build
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
# llama.cpp (llama-cpp-python, in the test and verifier extras) built for this CPU's instruction sets without the AMX
# path, which crashes the packaged model (docs/llm.md). The wheel is kept per pin, options and Python, and never taken
# from pip's cache, which ignores CMAKE_ARGS and could hand back a build made with other options.
llama=$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml | head -1)
llama_args=$(.venv/bin/python scripts/llama_build.py)
llama_key=$(printf '%s\n%s\n%s\n' "$llama" "$llama_args" "$(.venv/bin/python -V)" | sha256sum | cut -c1-16)
if [ "$(cat .venv/.llama-cpp-build 2>/dev/null)" != "$llama_key" ]; then
  wheels="${XDG_CACHE_HOME:-$HOME/.cache}/hindsight/llama-cpp-python/$llama_key"
  if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building $llama for this CPU ($llama_args); about 7-10 minutes once" >&2
    rm -rf "$wheels.partial" && mkdir -p "$wheels.partial"
    CMAKE_ARGS="$llama_args" FORCE_CMAKE=1 .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps \
      --no-binary llama-cpp-python -w "$wheels.partial" "$llama"
    rm -rf "$wheels" && mv "$wheels.partial" "$wheels"
  fi
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheels"/llama_cpp_python-*.whl
  echo "$llama_key" > .venv/.llama-cpp-build
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet -e ".[test]"
  echo "$want" > "$stamp"
fi
