"""The one compiled part: the library that sees what native code reads while a task records
(curator/core/_native_reads.c, docs/running.md). Optional: without a C compiler the package
installs and runs, and ``curator status`` says native reads are not traced."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "curator.core._native_reads",
            sources=["curator/core/_native_reads.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            libraries=["dl", "pthread"],
            optional=True,
        )
    ]
)
