"""The map is the territory (issue 55): every module a target's sources import is one Package.swift declares for it,
as `swift package dump-package` reads the manifest, so that no target builds only because another brought the
module in (NIOCore, NIOHTTP1 and Logging were imported undeclared)."""
import json
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the toolchain itself gives every target.
TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Dispatch", "Testing", "XCTest",
             "Synchronization", "Darwin", "os", "Observation", "_Concurrency", "Swift"}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*(?:public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?import\s+"
                    r"(?:typealias\s+|struct\s+|class\s+|enum\s+|protocol\s+|let\s+|var\s+|func\s+)?([A-Za-z_][A-Za-z0-9_]*)")


def manifest():
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    run = subprocess.run([swift, "package", "dump-package"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def declared(target):
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def imports(folder):
    found = {}
    for directory, _, files in os.walk(folder):
        for file in files:
            if file.endswith(".swift"):
                path = os.path.join(directory, file)
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        match = IMPORT.match(line)
                        if match:
                            found.setdefault(match.group(1), f"{os.path.relpath(path, ROOT)}:{number}")
    return found


def test_every_module_a_target_imports_is_declared_for_it():
    package = manifest()
    undeclared = []
    for target in package["targets"]:
        if target["type"] in ("system", "binary", "plugin", "macro"):
            continue
        default = os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])
        folder = os.path.join(ROOT, target.get("path") or default)
        assert os.path.isdir(folder), folder
        allowed = declared(target) | TOOLCHAIN | {target["name"]}
        for module, place in sorted(imports(folder).items()):
            if module not in allowed:
                undeclared.append(f"{target['name']} imports {module} ({place}), which Package.swift does not declare for it")
    assert not undeclared, "\n".join(undeclared)


def test_sqlite_is_called_only_through_its_module():
    """StoreshSQLite owns the connection (its handle is its own): no other Swift module calls `sqlite3_…` itself,
    so that every use of SQLite keeps that module's rules (errors, statements, blobs)."""
    calls = []
    for directory, _, files in os.walk(os.path.join(ROOT, "Sources")):
        if os.path.relpath(directory, os.path.join(ROOT, "Sources")).split(os.sep)[0] == "StoreshSQLite":
            continue
        for file in files:
            if file.endswith(".swift"):
                path = os.path.join(directory, file)
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        if re.search(r"\bsqlite3_[a-z_0-9]+\s*\(", line):
                            calls.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not calls, "\n".join(calls)
