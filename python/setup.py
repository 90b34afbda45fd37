"""Builds mnemo._mnemo, the extension over libmnemo, from the repository's C sources.

The library is made by the repository's own Makefile (its objects are
position-independent already, for libmnemo.so) as a static libmnemo.a in a
build folder, and linked into the extension; the extension links the Debian
system libraries the library needs (sqlite3, utf8proc, jansson, xxhash, zlib,
stemmer) dynamically, as the mnemo command does. libcurl and libpq are loaded
by the library at run time, when first needed: only their headers are needed
to build.

The C sources are found beside this folder (a checkout: ../Makefile) or, in a
source archive, in libmnemo/ inside it, where the sdist command copies them.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# What a source archive needs to build the library with the Makefile.
VENDORED = ("Makefile", "include", "src")


def library_root():
    """The folder holding the Makefile and src/: the checkout, else libmnemo/."""
    for root in (os.path.dirname(HERE), os.path.join(HERE, "libmnemo")):
        if os.path.isfile(os.path.join(root, "Makefile")) and os.path.isfile(
            os.path.join(root, "src", "mnemo.c")
        ):
            return root
    sys.exit(
        "mnemo: the library's C sources are missing: build from the repository "
        "(pip install ./python) or from a source archive made by python -m build --sdist"
    )


def version():
    with open(os.path.join(library_root(), "include", "mnemo.h"), encoding="utf-8") as f:
        return re.search(r'#define MNEMO_VERSION "([^"]+)"', f.read()).group(1)


def pkg_config(*args):
    pkgs = ["sqlite3", "libutf8proc", "jansson", "libxxhash", "zlib"]
    try:
        out = subprocess.run(
            ["pkg-config", *args, *pkgs], check=True, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(
            f"mnemo: pkg-config {' '.join(args)} failed ({e}); install the build "
            "dependencies (python/README.md)"
        )
    return out.split()


class BuildLibrary(build_ext):
    """Runs make for libmnemo.a first, then builds the extension against it."""

    def run(self):
        root = library_root()
        # In a checkout the objects stay in build/python/ and are reused by the
        # next install; from an archive they go in setuptools' temporary folder.
        if root == os.path.dirname(HERE):
            build = os.path.join(root, "build", "python")
        else:
            build = os.path.abspath(os.path.join(self.build_temp, "libmnemo"))
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        jobs = os.environ.get("MNEMO_BUILD_JOBS") or str(min(os.cpu_count() or 1, 8))
        cmd = ["make", "-C", root, f"-j{jobs}", f"BUILD={build}", f"{build}/libmnemo.a"]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=env)
        for ext in self.extensions:
            ext.include_dirs.append(os.path.join(root, "include"))
            ext.extra_objects.append(os.path.join(build, "libmnemo.a"))
            # relinked when the library changed, not only when _mnemo.c did
            ext.depends.append(os.path.join(build, "libmnemo.a"))
        super().run()


class SdistWithSources(sdist):
    """Puts the library's sources (Makefile, include/, src/) into the archive."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = library_root()
        for name in VENDORED:
            src = os.path.join(root, name)
            dst = os.path.join(base_dir, "libmnemo", name)
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)


libs = [a[2:] for a in pkg_config("--libs") if a.startswith("-l")]
lib_dirs = [a[2:] for a in pkg_config("--libs") if a.startswith("-L")]
ext = Extension(
    "mnemo._mnemo",
    sources=["ext/_mnemo.c"],
    libraries=libs + ["stemmer", "m", "pthread", "dl"],
    library_dirs=lib_dirs,
    extra_compile_args=[
        "-std=c11",
        "-D_GNU_SOURCE",
        "-Wall",
        "-Wextra",
        "-Wpedantic",
        "-Wshadow",
        "-Wformat=2",
        "-Wconversion",
        "-Wno-sign-conversion",
        "-Wstrict-prototypes",
        "-Wmissing-prototypes",
        "-Wvla",
        "-Wimplicit-fallthrough",
        "-fvisibility=hidden",
    ],
    # The library's mnemo_* functions stay inside the extension: a libmnemo.so
    # loaded into the same process (another binding) cannot interpose them.
    extra_link_args=["-Wl,--exclude-libs,ALL"],
)

setup(
    version=version(),
    ext_modules=[ext],
    cmdclass={"build_ext": BuildLibrary, "sdist": SdistWithSources},
)
