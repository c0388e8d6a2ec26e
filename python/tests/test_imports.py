"""Every module under tcgleague imports on its own, as the first tcgleague module of a process:
an import cycle (a module that only imports when something else was imported first) fails here.

One child interpreter walks python/src/tcgleague and, for each module, drops every tcgleague.*
entry from sys.modules before importing it, so each import starts from no tcgleague state
(third-party modules such as torch stay loaded, which keeps this fast)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

CHILD = textwrap.dedent("""
    import importlib, json, pkgutil, sys, traceback

    src = sys.argv[1]
    package = src + "/tcgleague"
    names = sorted({m.name for m in pkgutil.walk_packages([package], "tcgleague.")} | {"tcgleague"})
    failed, origins = {}, {}
    for name in names:
        for key in [k for k in sys.modules if k == "tcgleague" or k.startswith("tcgleague.")]:
            del sys.modules[key]
        try:
            module = importlib.import_module(name)
            origins[name] = getattr(module, "__file__", None)
        except BaseException:  # noqa: BLE001 - report every failure, SystemExit included
            failed[name] = traceback.format_exc()
    print(json.dumps({"modules": names, "failed": failed, "origins": origins}))
""")


@pytest.mark.slow  # fast set: test_structure (no import cycle, read from the source)
def test_every_module_imports_first_in_a_fresh_interpreter():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(SRC)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=SRC.parents[1],
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    modules = result["modules"]
    on_disk = {
        p.relative_to(SRC).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
        for p in (SRC / "tcgleague").rglob("*.py")
    }
    assert on_disk <= set(modules), f"modules the walk missed: {sorted(on_disk - set(modules))}"
    assert {"tcgleague.match", "tcgleague.build", "tcgleague.league.opponents", "tcgleague.config.loader"} <= set(
        modules
    )
    assert not result["failed"], "\n\n".join(f"{name}:\n{tb}" for name, tb in result["failed"].items())
    # the modules imported are the checkout's, not an installed copy
    assert all(o is None or Path(o).resolve().is_relative_to(SRC) for o in result["origins"].values())
