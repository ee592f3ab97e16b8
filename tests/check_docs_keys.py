#!/usr/bin/env python3
"""Every key a solver declares is documented: `cumulus keys SOLVER` against docs/*.md."""
import pathlib
import re
import subprocess
import sys

binary, docs_dir = sys.argv[1], pathlib.Path(sys.argv[2])
docs = "\n".join(p.read_text() for p in docs_dir.glob("*.md"))
solvers = ["heat", "lbm", "shallow_water", "md"]
missing = []
checked = 0
for solver in solvers:
    out = subprocess.run([binary, "keys", solver], capture_output=True, text=True, timeout=60, check=True).stdout
    for key in re.findall(r"^\| `([^`]+)` \|", out, flags=re.M):
        checked += 1
        if f"`{key}`" not in docs:
            missing.append(f"{solver}: {key}")
for m in missing:
    print(f"undocumented key: {m}")
print(f"{checked - len(missing)} passed, {len(missing)} failed")
sys.exit(1 if missing or checked == 0 else 0)
