"""Builds the Emberfront C engine as tcgleague.engine._tcg (CPU only; no CUDA is ever involved)."""
from pathlib import Path

from setuptools import Extension, setup

ENGINE = Path("python/src/tcgleague/engine")
SOURCES = ["rules.c", "actions.c", "observe.c", "env.c", "greedy.c", "lookahead.c", "render.c", "position.c", "layout.c", "binding.c"]

setup(
    ext_modules=[
        Extension(
            "tcgleague.engine._tcg",
            sources=[str(ENGINE / s) for s in SOURCES],
            include_dirs=[str(ENGINE)],
            extra_link_args=["-flto", "-O3", "-fopenmp"],
            extra_compile_args=["-O3", "-std=c11", "-fopenmp", "-fvisibility=hidden", "-flto", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
