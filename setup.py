"""Builds the Emberfront C engine as tcgleague.games.emberfront.engine._tcg (CPU only; no CUDA is ever involved)."""
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, LinkError

ENGINE = Path("python/src/tcgleague/games/emberfront/engine")
SOURCES = ["rules.c", "actions.c", "observe.c", "env.c", "greedy.c", "lookahead.c", "render.c", "position.c", "layout.c", "binding.c"]
LTO = "-flto"


class BuildEngine(build_ext):
    """Link-time optimisation where the toolchain has it. Some GCC installs cannot run their
    lto-wrapper ("ld: error: could not run lto-wrapper"); the engine then builds without -flto
    instead of not at all: the same code, about 0.75x the decisions/s (`bench engine`)."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except (CompileError, LinkError):
            if LTO not in ext.extra_compile_args:
                raise
            print(f"note: {ext.name} did not build with {LTO} on this toolchain; building it without")
            ext.extra_compile_args = [flag for flag in ext.extra_compile_args if flag != LTO]
            ext.extra_link_args = [flag for flag in ext.extra_link_args if flag != LTO]
            self.force = True
            super().build_extension(ext)


setup(
    cmdclass={"build_ext": BuildEngine},
    ext_modules=[
        Extension(
            "tcgleague.games.emberfront.engine._tcg",
            sources=[str(ENGINE / s) for s in SOURCES],
            include_dirs=[str(ENGINE)],
            depends=[str(header) for header in sorted(ENGINE.glob("*.h"))],  # a header change rebuilds too
            extra_link_args=[LTO, "-O3", "-fopenmp"],
            extra_compile_args=["-O3", "-std=c11", "-fopenmp", "-fvisibility=hidden", LTO, "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ],
)
