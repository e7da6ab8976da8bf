"""Check that imports run down the layers (ARCHITECTURE.md): exit 1 and list every import that runs up.

Every import counts, those inside functions too. Usage: ``python tools/check_layers.py [ROOT]``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# position of each top-level unit; a unit may import units with a lower number only
LAYERS = {
    "engine": {"progress": 0, "runtime": 1, "weights": 2, "decode": 3, "speculative": 4, "planning": 5,
               "generator": 6, "bench": 7, "training": 7},
    "promptx": {"errors": 0, "data_cache": 0, "text": 1, "profiles": 2, "quality": 3, "images": 3, "prompt_files": 3, "hub_cache": 3,
                "tuning_pairs": 3, "image_url": 3, "options": 3, "languages": 3, "request": 4, "result": 4, "models": 4, "compose": 4,
                "backends": 5, "structured": 5, "tune": 6,
                "enhancer": 6, "batch_run": 7, "api": 7, "serve": 8, "diffusers": 8, "comfyui": 8, "ray": 8, "cli": 9, "__main__": 10, "__init__": 10},
}


def _module(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _imported(root: Path, path: Path, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        return [node.module] if node.module else []
    package = _module(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    if node.module:
        return [".".join(base + [node.module])]
    return [".".join(base + [alias.name]) for alias in node.names]


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def violations(root: Path) -> list[str]:
    """One line per import that runs up a layer, sideways between engine units, or from engine into promptx."""
    found = []
    for top, layers in LAYERS.items():
        for path in sorted((root / top).rglob("*.py")):
            module = _module(root, path)
            mine = _unit(module)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for target in _imported(root, path, node):
                    head = target.split(".")[0]
                    if top == "engine" and head == "promptx":
                        found.append(f"{module} imports {target}: engine never imports promptx")
                        continue
                    theirs = _unit(target)
                    if head != top or theirs == mine:
                        continue
                    if mine not in layers or theirs not in layers:
                        found.append(f"{module} imports {target}: {mine if mine not in layers else theirs} "
                                     "has no layer (add it to tools/check_layers.py and ARCHITECTURE.md)")
                    elif layers[theirs] >= layers[mine] and not (top == "promptx" and layers[theirs] == layers[mine]):
                        found.append(f"{module} imports {target}: {theirs} is not below {mine}")
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = violations(root)
    for line in found:
        print(line)
    print(f"{len(found)} import(s) against the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
