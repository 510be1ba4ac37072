#!/usr/bin/env python3
"""layers_test.py -- the house's arrows, checked on the sources (TAP).

Each folder of server/ is a layer that may include only its own headers,
the layers upstream of it, and the generated protobuf headers where stated.
The build already refuses most back-arrows (each layer has its own include
path); this test also catches what an include path cannot: a relative
"../" include, a header that exists in two layers, and include circles
between modules (from the symbols the built objects define and use),
files over 800 lines, and an ingest reader that reaches into the sink's
structs instead of calling its API (ingest_sink.h).
"""
import glob
import os
import re
import subprocess
import sys

SRC = os.environ.get("NEX_SRCDIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")
SERVER = os.path.join(SRC, "server")

# layer -> the layers it may include (itself included)
ALLOWED = {
    "base": {"base"},
    "input": {"base", "input", "proto"},
    "store": {"base", "store"},
    "ingest": {"base", "input", "proto", "store", "ingest"},
    "query": {"base", "store", "query", "proto"},  # the pftrace export
    "app": {"base", "store", "ingest", "app"},
    "serve": {"base", "store", "query", "ingest", "app", "serve"},
    "main": {"base", "input", "proto", "store", "ingest", "query", "app",
             "serve"},
}
LAYER_DIRS = ["base", "input", "store", "ingest", "query", "serve"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

n = 0
failed = 0


def ok(cond, what, detail=()):
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    if not cond:
        failed += 1
        for line in list(detail)[:40]:
            print("#   " + line)


def layer_of(rel):
    """The layer of a file path relative to server/."""
    parts = rel.split(os.sep)
    if len(parts) > 1 and parts[0] in LAYER_DIRS:
        return parts[0]
    return "main" if parts[-1] == "main.c" else "app"


files = {}  # rel path -> text
for root, _, names in os.walk(SERVER):
    for name in names:
        if name.endswith((".c", ".h")) and ".pb-c." not in name:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, SERVER)
            with open(path, encoding="utf-8") as f:
                files[rel] = f.read()

headers = {}  # base name -> [rel paths]
for rel in files:
    if rel.endswith(".h"):
        headers.setdefault(os.path.basename(rel), []).append(rel)

ok(len(files) > 40, "the sources of server/ are found (%d files)" % len(files))
twice = ["%s: %s" % (h, ", ".join(p)) for h, p in headers.items() if len(p) > 1]
ok(not twice, "no header name stands in two layers", twice)

relative, against, unknown = [], [], []
for rel, text in sorted(files.items()):
    me = layer_of(rel)
    for inc in INCLUDE.findall(text):
        if "/" in inc or inc.startswith(".."):
            relative.append("%s includes \"%s\"" % (rel, inc))
            continue
        if inc.endswith(".pb-c.h"):
            target = "proto"
        elif inc in headers:
            target = layer_of(headers[inc][0])
        else:
            unknown.append("%s includes \"%s\"" % (rel, inc))
            continue
        if target not in ALLOWED[me]:
            against.append("%s (%s) includes %s (%s)" % (rel, me, inc, target))
ok(not relative, "no include names a path", relative)
ok(not unknown, "every quoted include is a header of server/", unknown)
ok(not against, "no include goes against the flow", against)


# Circles between modules, from the symbols of the built objects: module A
# depends on B when A uses a function or object that B defines.
BUILD = os.environ.get("NEX_BUILDDIR")
libs = sorted(glob.glob(os.path.join(BUILD, "libnex_*.a"))) if BUILD else []
defined, used = {}, {}
for lib in libs:
    if lib.endswith("libnex_proto.a"):
        continue
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        # lib.a:libnex_ingest_a-lanes.o:0000 T lanes_new
        m = re.match(r"[^:]+:(?:lib\w+_a-)?([\w]+)\.o:\s*(?:[0-9a-f]+)?\s+(\w)\s+(\S+)$",
                     line)
        if not m:
            continue
        module, kind, sym = m.groups()
        if kind == "U":
            used.setdefault(module, set()).add(sym)
        elif kind in "TDBR":
            defined[sym] = module
graph = {}
for module, syms in used.items():
    for sym in syms:
        other = defined.get(sym)
        if other and other != module:
            graph.setdefault(module, set()).add(other)

circles = []
state = {}


def visit(node, stack):
    state[node] = 1
    stack.append(node)
    for nxt in sorted(graph.get(node, ())):
        if state.get(nxt) == 1:
            circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
        elif not state.get(nxt):
            visit(nxt, stack)
    stack.pop()
    state[node] = 2


for node in sorted(graph):
    if not state.get(node):
        visit(node, [])
if libs:
    ok(not circles, "no circle between modules (%d modules linked)"
       % len(set(defined.values())), circles)
else:
    n += 1
    print("ok %d - # SKIP no built libraries (NEX_BUILDDIR unset)" % n)

big = ["%s: %d lines" % (rel, text.count("\n"))
       for rel, text in sorted(files.items()) if text.count("\n") > 800]
ok(not big, "no file in server/ over 800 lines", big)

webdir = os.path.join(SRC, "web")
bigweb = []
for root, _, names in os.walk(webdir):
    for name in names:
        path = os.path.join(root, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().count("\n")
        if lines > 800:
            bigweb.append("%s: %d lines" % (os.path.relpath(path, SRC), lines))
ok(not bigweb, "no file in web/ over 800 lines", bigweb)

# The ingest sink stays opaque: struct ing and struct itrack are defined in
# ingest_core.h, which only the core includes; a reader writes through the
# functions of ingest_sink.h and never reaches into the sink.
INGEST_CORE = {"ingest.c", "ingest_sink.c", "ingest_run.c"}
readers = [rel for rel in sorted(files)
           if layer_of(rel) == "ingest" and rel.endswith(".c")
           and os.path.basename(rel).startswith("ingest_")
           and os.path.basename(rel) not in INGEST_CORE]
ok(len(readers) >= 8, "the ingest readers are found (%d files)" % len(readers))
core_inc = ["%s includes ingest_core.h" % rel for rel, text in sorted(files.items())
            if os.path.basename(rel) not in INGEST_CORE
            and "ingest_core.h" in INCLUDE.findall(text)
            and rel != os.path.join("ingest", "ingest_core.h")]
ok(not core_inc, "only the ingest core includes ingest_core.h", core_inc)
POKE = re.compile(r"\bg->\w+|\bg\.\w+|struct ing\s*\{|struct itrack\s*\{")
pokes = ["%s:%d: %s" % (rel, files[rel][:m.start()].count("\n") + 1, m.group(0))
         for rel in readers for m in POKE.finditer(files[rel])]
ok(not pokes, "no ingest reader reaches into the sink (g->)", pokes)

# The release tarball (make dist) carries what the build and the page
# need: every file of server/, web/ and bench/ is named in Makefile.am.
with open(os.path.join(SRC, "Makefile.am"), encoding="utf-8") as f:
    AM_NAMES = set(re.findall(r"[\w./-]+", f.read()))
SHIPPED = re.compile(r"\.(c|h|js|css|html|svg|png|py|mjs|sh)$")
unlisted = []
for top in ("server", "web", "bench"):
    for root, _, names in os.walk(os.path.join(SRC, top)):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(root, name), SRC)
            if SHIPPED.search(name) and rel not in AM_NAMES:
                unlisted.append(rel)
ok(not unlisted, "every source of server/, web/ and bench/ is in Makefile.am "
   "(else make dist leaves it out)", unlisted)

print("1..%d" % n)
sys.exit(1 if failed else 0)
