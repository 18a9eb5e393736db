#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documentation holds together: every relative link (and its #anchor) in
# README.md, docs/*.md and the READMEs of the tree names a file inside the
# project that exists; every page of docs/ is linked from README.md; every
# file path docs/architecture.md names exists; and no file of the project
# refers to the shared folder outside it (dot-dot-slash shared).
#   test/integration/docs_check.sh [top-dir]     (default: this tree)
set -uo pipefail

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
exec python3 - "$top" <<'EOF'
import os, re, sys

top = sys.argv[1]
failures = 0
passes = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def ok(msg):
    global passes
    passes += 1
    print("ok:   " + msg)

# Directories that are not part of the project's sources: build trees,
# caches, version control.
def skipped_dir(rel, name):
    return (name in (".git", "autom4te.cache", "target", "node_modules", "__pycache__")
            or (rel == "" and name.startswith("build"))
            # what dpkg-buildpackage leaves in debian/ (packages, build tree)
            or (rel == "debian" and name not in ("source", "patches", "tests")))

def project_files():
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        rel = "" if rel == "." else rel
        dirs[:] = sorted(d for d in dirs if not skipped_dir(rel, d))
        for f in sorted(files):
            yield os.path.join(rel, f)

def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks, numbered."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line

def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces
    as hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

anchor_cache = {}
def anchors(path):
    if path not in anchor_cache:
        seen = {}
        out = set()
        with open(path, encoding="utf-8") as f:
            for _, line in prose_lines(f.read()):
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                s = slug(m.group(1))
                k = seen.get(s, 0)
                seen[s] = k + 1
                out.add(s if k == 0 else "%s-%d" % (s, k))
        anchor_cache[path] = out
    return anchor_cache[path]

link_re = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")

def links(text):
    for n, line in prose_lines(text):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
        for m in link_re.finditer(line):
            yield n, m.group(1)

# 1. Links of README.md, docs/*.md and every other README.md of the tree.
md_files = ["README.md"]
md_files += sorted("docs/" + f for f in os.listdir(os.path.join(top, "docs")) if f.endswith(".md"))
md_files += [f for f in project_files()
             if os.path.basename(f) == "README.md" and f != "README.md"]
linked_from_readme = set()
for md in md_files:
    with open(os.path.join(top, md), encoding="utf-8") as f:
        text = f.read()
    bad = 0
    count = 0
    for n, target in links(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        count += 1
        where = "%s:%d: link '%s'" % (md, n, target)
        path, _, anchor = target.partition("#")
        if path:
            dest = os.path.normpath(os.path.join(top, os.path.dirname(md), path))
        else:
            dest = os.path.join(top, md)
        if os.path.relpath(dest, top).startswith(".."):
            fail(where + " points outside the project")
            bad += 1
            continue
        if not os.path.exists(dest):
            fail(where + ": no such file " + os.path.relpath(dest, top))
            bad += 1
            continue
        if md == "README.md":
            linked_from_readme.add(os.path.relpath(dest, top))
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            fail(where + ": no heading '#%s' in %s" % (anchor, os.path.relpath(dest, top)))
            bad += 1
    if bad == 0:
        ok("%s: %d relative links resolve" % (md, count))

# 2. Every page of docs/ is reachable from the README.
for md in md_files:
    if md.startswith("docs/") and md not in linked_from_readme:
        fail("%s is not linked from README.md" % md)
if all(md in linked_from_readme for md in md_files if md.startswith("docs/")):
    ok("every page of docs/ is linked from README.md")

# 3. Every file path docs/architecture.md names exists. A path is a word in
# backquotes whose first part is a top-level folder of the project;
# "x.{h,cc}" stands for x.h and x.cc, "x.*" for any file x.<ext>, and a
# placeholder (<name>) makes it a pattern, not a path.
tops = {d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))
        and not skipped_dir("", d)}
arch = "docs/architecture.md"
with open(os.path.join(top, arch), encoding="utf-8") as f:
    arch_text = f.read()
named = 0
missing = 0
for n, line in enumerate(arch_text.split("\n"), 1):
    for word in re.findall(r"`([^`\s]+)`", line):
        if "<" in word or "/" not in word or word.split("/")[0] not in tops:
            continue
        named += 1
        m = re.match(r"^(.*)\.\{([^}]*)\}$", word)
        candidates = ([m.group(1) + "." + e for e in m.group(2).split(",")] if m else [word])
        for c in candidates:
            if c.endswith(".*"):
                d, base = os.path.split(c[:-2])
                found = os.path.isdir(os.path.join(top, d)) and any(
                    f.startswith(base + ".") for f in os.listdir(os.path.join(top, d)))
            else:
                found = os.path.exists(os.path.join(top, c.rstrip("/")))
            if not found:
                fail("%s:%d: names %s, which does not exist" % (arch, n, c))
                missing += 1
if named < 20:
    fail("%s names only %d paths: is the check reading it?" % (arch, named))
elif missing == 0:
    ok("%s: all %d paths it names exist" % (arch, named))

# 4. Nothing refers to the shared folder outside the project.
needle = ".." + "/shared"
refs = 0
for rel in project_files():
    try:
        with open(os.path.join(top, rel), encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        continue  # binary files
    for n, line in enumerate(text.split("\n"), 1):
        if needle in line:
            fail("%s:%d refers to %s, outside the project" % (rel, n, needle))
            refs += 1
if refs == 0:
    ok("no file refers to %s" % needle)

print("docs_check: %d passed, %d failed" % (passes, failures))
sys.exit(1 if failures else 0)
EOF
