#!/usr/bin/env bash
# Usage: pip-find-links.sh PYTHON PIP-INSTALL-ARGS...
# Prints a --find-links option for each local folder from which pip, under its own configuration,
# would take the given requirements. uv reads no pip configuration: given these folders it takes
# the same files (e.g. a CPU build of torch that lies on disk, where PyPI has only the CUDA one).
# pip only resolves here (--dry-run): nothing is installed.
set -euo pipefail
python=$1
shift
"$python" -m pip install --quiet --dry-run --ignore-installed --report - "$@" |
    "$python" -c '
import json, sys
from pathlib import Path
from urllib.parse import unquote, urlparse

urls = [item["download_info"]["url"] for item in json.load(sys.stdin)["install"]]
folders = sorted({str(Path(unquote(urlparse(u).path)).parent) for u in urls if u.startswith("file:")})
print(" ".join(f"--find-links {folder}" for folder in folders))
'
