#!/usr/bin/env python3
"""Fails when a target's declared dependencies in Package.swift differ from the package's modules its
Swift files import: an undeclared import builds only by luck of the build order, and a declared
dependency nothing imports is a layer that is not there. Reads `swift package dump-package`, with the
fuzz harness's target included (APUSH_FUZZ=1)."""
import os
import json
import pathlib
import re
import subprocess
import sys

IMPORT = re.compile(
    r"^\s*(?:@testable\s+)?(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE)

root = pathlib.Path(__file__).resolve().parent.parent
package = json.loads(subprocess.run(
    ["swift", "package", "dump-package"], cwd=root, check=True, capture_output=True, text=True,
    env={**os.environ, "APUSH_FUZZ": "1"}).stdout)
modules = {target["name"] for target in package["targets"]}
default_folder = {"test": "Tests", "system": "Sources"}
differences = []
for target in package["targets"]:
    if target["type"] == "system":
        continue
    folder = root / (target.get("path") or f"{default_folder.get(target['type'], 'Sources')}/{target['name']}")
    imported = set()
    for source in folder.rglob("*.swift"):
        imported |= {name for name in IMPORT.findall(source.read_text()) if name in modules}
    imported.discard(target["name"])
    declared = {next(iter(dependency.values()))[0] for dependency in target.get("dependencies", [])}
    for name in sorted(imported - declared):
        differences.append(f"{target['name']}: imports {name} but does not declare it")
    for name in sorted(declared - imported):
        differences.append(f"{target['name']}: declares {name} but no file imports it")
if differences:
    print("Package.swift's dependencies differ from the imports:", *differences, sep="\n  ")
    sys.exit(1)
print(f"Package.swift: the dependencies of {len(package['targets'])} targets are what they import")
